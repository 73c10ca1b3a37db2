"""Assemble the prose sentences of bench_quality from the Debian package ``fortunes``.

    apt-get download fortunes && dpkg-deb -x fortunes_*.deb /tmp/fortunes
    python benchmarks/data/build_prose.py /tmp/fortunes/usr/share/games/fortunes

Source: Debian bookworm ``fortunes`` 1:1.99.1-7.3 (the BSD fortune data, files below). Kept:
single prose sentences of 12-30 words made only of ASCII letters and light punctuation, without
quotation marks, dialogue, attributions or capitals-only words; de-duplicated; in file order.
``N_BENCH`` + ``N_DEV`` of them, evenly spaced over the kept ones, alternate between the
benchmark set and the dev set (tuning only), so the two never share a sentence.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

FILES = ["wisdom", "people", "education", "work", "love", "food", "pets", "science", "platitudes", "medicine",
         "miscellaneous", "humorists", "sports", "kids", "art", "news"]
N_BENCH, N_DEV = 150, 40
OK = re.compile(r"^[A-Z][A-Za-z ,;'\-]+[.]$")
HERE = Path(__file__).parent


def sentences(text: str):
    for cookie in text.split("\n%\n"):
        body = "\n".join(line for line in cookie.splitlines() if not line.strip().startswith("--"))
        if re.search(r"[:\"`()]|\t|^\s", body, re.M):  # dialogue, quotes, verse, lists
            continue
        flat = re.sub(r"\s+", " ", body).strip()
        for s in re.split(r"(?<=[.!?])\s+", flat):
            words = s.split()
            if not OK.match(s) or not 12 <= len(words) <= 30:
                continue
            if any(w.isupper() and len(w) > 1 for w in words) or "''" in s or " -" in s or "- " in s:
                continue
            yield s


def main(folder: str) -> None:
    seen, kept = set(), []
    for name in FILES:
        for s in sentences((Path(folder) / name).read_text(encoding="latin-1")):
            if s.lower() not in seen:
                seen.add(s.lower())
                kept.append((name, s))
    head = "# source: Debian bookworm package 'fortunes' 1:1.99.1-7.3, /usr/share/games/fortunes/<file>\n"
    n = N_BENCH + N_DEV
    picked = [kept[i * len(kept) // n] for i in range(n)]
    dev = picked[1::n // N_DEV][:N_DEV]
    bench = [x for x in picked if x not in dev]
    for fname, rows in (("prose_bench.tsv", bench), ("prose_dev.tsv", dev)):
        (HERE / fname).write_text(head + "".join(f"{n}\t{s}\n" for n, s in rows), encoding="utf-8")
    print(f"{len(bench)} benchmark + {len(dev)} dev sentences")


if __name__ == "__main__":
    main(sys.argv[1])
