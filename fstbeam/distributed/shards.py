"""The batch command's files: input rows, output shards named by row range, the job manifest.

A shard ``rows-000000000-000000999.jsonl`` holds the output of input rows 0..999 in order. It is
written to a temporary file and renamed, so it exists whole or not at all; a rerun skips the
shards that exist. ``_job.json`` records what the output was made from, so a rerun with another
input or other settings is refused rather than mixed in.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import BatchError
from .rows import INPUT_COLUMNS

__all__ = ["Shard", "plan_shards", "read_input", "write_shard", "json_line", "shard_done", "check_manifest", "file_sha256"]

MANIFEST = "_job.json"
_PREFIX, _SUFFIX = "rows-", ".jsonl"


@dataclass(frozen=True)
class Shard:
    start: int  # first input row
    stop: int  # one past the last

    @property
    def name(self) -> str:
        return f"{_PREFIX}{self.start:09d}-{self.stop - 1:09d}{_SUFFIX}"

    def __len__(self) -> int:
        return self.stop - self.start


def plan_shards(rows: int, shard_size: int) -> list[Shard]:
    if not isinstance(shard_size, int) or shard_size < 1:
        raise BatchError(f"shard size must be a positive integer (got {shard_size!r})")
    return [Shard(s, min(s + shard_size, rows)) for s in range(0, rows, shard_size)]


# ---- input ------------------------------------------------------------------------------------
def read_input(path) -> list[dict]:
    """Rows of a ``.jsonl`` file (one JSON object per non-blank line) or a ``.parquet`` file.

    A JSONL line that is not a JSON object becomes a row with ``_error`` (its output row says
    why); an unknown column is an error for the whole job (a misspelt ``phrase`` column would
    otherwise be ignored silently).
    """
    p = Path(path)
    if not p.is_file():
        raise BatchError(f"input {p} is not a file: give a .jsonl or .parquet file of prompts")
    if p.suffix == ".parquet":
        rows = _read_parquet(p)
    elif p.suffix in (".jsonl", ".ndjson"):
        rows = _read_jsonl(p)
    else:
        raise BatchError(f"input {p}: unknown format {p.suffix!r}; give a .jsonl or .parquet file")
    if not rows:
        raise BatchError(f"input {p} has no rows")
    cols = set().union(*(r.keys() for r in rows)) - {"_error"}
    if "prompt" not in cols:
        raise BatchError(f"input {p} has no 'prompt' column: every row needs a 'prompt' string")
    extra = cols - set(INPUT_COLUMNS)
    if extra:
        raise BatchError(f"input {p}: unknown column(s) {sorted(extra)}; a row may have {', '.join(INPUT_COLUMNS)}")
    return rows


def _read_jsonl(p: Path) -> list[dict]:
    rows = []
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise BatchError(f"input {p} is not UTF-8 text ({exc}): save it as UTF-8 JSON lines") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            row = {"_error": f"{p.name}:{n} is not JSON ({exc.msg})"}
        if not isinstance(row, dict):
            row = {"_error": f"{p.name}:{n} is not a JSON object"}
        rows.append(row)
    return rows


def _read_parquet(p: Path) -> list[dict]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise BatchError("reading .parquet needs pyarrow: pip install 'fstbeam[ray]'") from None
    try:
        return pq.read_table(p).to_pylist()
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a bad file
        raise BatchError(f"input {p} is not a readable parquet file ({exc})") from None


def file_sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ---- output -----------------------------------------------------------------------------------
def write_shard(out_dir: Path, shard: Shard, rows: list[dict]) -> Path:
    """Write ``rows`` (in order) atomically: a temporary file in the same folder, then a rename."""
    if len(rows) != len(shard):
        raise AssertionError(f"shard {shard.name}: {len(rows)} rows for {len(shard)} inputs")
    final = out_dir / shard.name
    tmp = out_dir / f".{shard.name}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(json_line(r) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)  # after a failure: never leave a temporary behind
    return final


def json_line(row: dict) -> str:
    """One output row as JSON, UTF-8 text as is; a row holding text that is not valid Unicode (a
    lone surrogate in a bad input's prompt) is written with escapes, so it is still written."""
    line = json.dumps(row, ensure_ascii=False)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(row, ensure_ascii=True)
    return line


def shard_done(out_dir: Path, shard: Shard) -> bool:
    """Whether the shard's file exists with one line per input row (a rename makes it whole)."""
    f = out_dir / shard.name
    if not f.is_file():
        return False
    with open(f, "rb") as fh:
        return sum(1 for _ in fh) == len(shard)


def remove_temporaries(out_dir: Path) -> None:
    """Temporary files of an interrupted run (never renamed, so never counted)."""
    for t in out_dir.glob(f".{_PREFIX}*{_SUFFIX}.tmp-*"):
        t.unlink(missing_ok=True)


def check_manifest(out_dir: Path, job: dict) -> None:
    """Create the output folder and its manifest, or check that it holds this same job."""
    out_dir.mkdir(parents=True, exist_ok=True)
    m = out_dir / MANIFEST
    if m.exists():
        try:
            old = json.loads(m.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise BatchError(f"{m} is unreadable ({exc}): use another --output folder or delete this one") from None
        diff = sorted(k for k in set(old) | set(job) if old.get(k) != job.get(k))
        if diff:
            raise BatchError(f"{out_dir} holds the output of another job (differs in: {', '.join(diff)}): "
                             "rerun with the same input and settings to resume, or use another --output folder")
        return
    stray = sorted(x.name for x in out_dir.iterdir() if not x.name.startswith("."))
    if stray:
        raise BatchError(f"{out_dir} is not empty and has no {MANIFEST} ({stray[0]}, ...): use an empty or new --output folder")
    tmp = out_dir / f".{MANIFEST}.tmp-{os.getpid()}"
    tmp.write_text(json.dumps(job, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, m)
