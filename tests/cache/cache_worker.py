"""One "first run" on the cache at $FSTBEAM_CACHE (run twice at once by test_cache.py).

Fills every kind of cache entry through the real code: the GGUF assembly (from a fake chunk
package on PYTHONPATH, tiny), a converted folder, the CEFR table (real cefrpy) and an index file.
Prints a JSON summary; each build appends a line to $BUILD_LOG.
"""
from __future__ import annotations

import hashlib
import json
import os
import time

import numpy as np


def log_build(what: str) -> None:
    with open(os.environ["BUILD_LOG"], "a") as fh:
        fh.write(what + "\n")


def main() -> None:
    from fstbeam.contract.disk_cache import cached_arrays
    from fstbeam.files import default_model
    from fstbeam.grammars.cefr import grammar as cefr

    gguf = default_model.gguf_path()

    def save(tmp):
        log_build("folder")
        time.sleep(0.5)  # a slow conversion: the other process must wait, not race
        (tmp / "tokenizer.json").write_text('{"x": 1}', encoding="utf-8")

    folder = default_model._atomic_save("fake", save)

    def build():
        log_build("index")
        time.sleep(0.2)
        return {"a": np.arange(10)}

    arrays = cached_arrays("test", "k" * 32, build)
    table = cefr._table()
    print(json.dumps({
        "gguf": hashlib.sha256(gguf.read_bytes()).hexdigest(),
        "folder": (folder / "tokenizer.json").read_text(),
        "index": arrays["a"].tolist(),
        "cefr_words": len(table),
    }))


if __name__ == "__main__":
    main()
