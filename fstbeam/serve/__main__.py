"""``python -m fstbeam.serve [options]``: the same as ``fstbeam serve [options]``."""
from .cli import main

raise SystemExit(main())
