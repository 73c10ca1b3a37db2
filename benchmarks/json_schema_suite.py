"""The official JSON Schema Test Suite as `structured_oracle.py` input: one file per test group
({"schema", "tests": [{"data", "valid"}]}, as JSONSchemaBench writes them), the group's draft
written into the schema's `$schema` where the schema has none (the suite keeps each draft in
its own folder). Groups that need the suite's remote server (`refRemote`) are left out: fstbeam
compiles one document. The suite ships in `jsonschema`'s source distribution:

    pip download jsonschema==4.23.0 --no-binary :all: --no-deps -d /tmp/suite
    tar xzf /tmp/suite/jsonschema-4.23.0.tar.gz -C /tmp/suite
    python benchmarks/json_schema_suite.py /tmp/suite/jsonschema-4.23.0/json/tests /tmp/suite/cases
    python benchmarks/structured_oracle.py /tmp/suite/cases --samples 10 --json benchmarks/results/structured_oracle_suite.json

A file is named ``{draft}---{folder-}{keyword file}_{group}.json`` (``draft2020-12---optional-
format-idn-hostname_0.json``). Under 2019-09 and 2020-12 the suite's own `format.json` expects
`format` to be an annotation; fstbeam enforces formats (docs/structured.md), so its invalid
strings there count as valid instances rejected.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

DRAFTS = {"draft4": "http://json-schema.org/draft-04/schema#", "draft6": "http://json-schema.org/draft-06/schema#",
          "draft7": "http://json-schema.org/draft-07/schema#",
          "draft2019-09": "https://json-schema.org/draft/2019-09/schema",
          "draft2020-12": "https://json-schema.org/draft/2020-12/schema"}
FOLDERS = ("", "optional", "optional/format")


def convert(tests_dir: Path, out_dir: Path) -> int:
    """Write one file per test group; the number written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = 0
    for draft, uri in DRAFTS.items():
        for folder in FOLDERS:
            here = tests_dir / draft / folder
            for path in sorted(here.glob("*.json")) if here.is_dir() else []:
                if path.stem.startswith("refRemote"):
                    continue
                tag = (folder.replace("/", "-") + "-" if folder else "") + path.stem
                for i, group in enumerate(json.loads(path.read_text(encoding="utf-8"))):
                    schema = group["schema"]
                    if isinstance(schema, dict) and "$schema" not in schema:
                        schema = {**schema, "$schema": uri}
                    tests = [{"description": t["description"], "valid": t["valid"], "data": t["data"]}
                             for t in group["tests"]]
                    record = {"description": group["description"], "schema": schema, "tests": tests}
                    (out_dir / f"{draft}---{tag}_{i}.json").write_text(json.dumps(record, ensure_ascii=False),
                                                                       encoding="utf-8")
                    written += 1
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tests_dir", help="the suite's tests/ folder (draft4/, draft7/, draft2020-12/, ...)")
    ap.add_argument("out_dir", help="where to write one file per test group")
    args = ap.parse_args(argv)
    tests_dir = Path(args.tests_dir)
    if not (tests_dir / "draft7").is_dir():
        print(f"error: {tests_dir} has no draft7/ folder: give the suite's tests/ folder "
              "(json/tests in jsonschema's source distribution)", file=sys.stderr)
        return 2
    n = convert(tests_dir, Path(args.out_dir))
    print(f"{n} test groups written to {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
