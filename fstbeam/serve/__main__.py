"""``python -m fstbeam.serve [options]``: the same as ``fstbeam serve [options]``."""
from ..cli.serve import main

if __name__ == "__main__":
    raise SystemExit(main())
