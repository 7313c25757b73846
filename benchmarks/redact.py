"""What ``--redact`` costs: writing the normalized lines of every capture with and without it.

    .venv/bin/python benchmarks/redact.py

The events of every capture under adapters/ are made once; then, in one process,
round after round, the same lines are (a) joined for writing, (b) passed through
:meth:`normalize.Redactor.feed` (deltas held back, every string read), and (c)
converted from the native files and encoded, for scale.  Reported: each path's
throughput over the normalized bytes, best of the rounds, and the ratios, which
hold on any machine even when the absolute times do not.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import normalize  # noqa: E402
from helpers import capture_files, convert_records, protocol_of, records_of  # noqa: E402
from normalize import Redactor  # noqa: E402

ROUNDS = 3


def main() -> None:
    captures = capture_files()
    records = [(list(records_of([c])), protocol_of(c)) for c in captures]
    lines = [normalize.encode(e) for recs, protocol in records for e in convert_records(recs, protocol)]
    size = sum(len(x) + 1 for x in lines)

    def plain() -> None:
        b"\n".join(lines)

    def redacted() -> None:
        r = Redactor()
        out = [held for line in lines for held in r.feed(line)]
        out += r.flush()
        b"\n".join(out)

    def conversion() -> None:
        for recs, protocol in records:
            for e in convert_records(recs, protocol):
                normalize.encode(e)

    best: dict[str, float] = {}
    paths: dict[str, Callable[[], None]] = {"write": plain, "convert": conversion, "redact": redacted}
    for _ in range(ROUNDS):
        for name, fn in paths.items():
            t = time.perf_counter()
            fn()
            best[name] = min(best.get(name, float("inf")), time.perf_counter() - t)
    mb = size / 1e6
    print(f"{len(captures)} captures, {len(lines)} normalized lines, {mb:.1f} MB")
    for name, t in best.items():
        print(f"  {name:8} {t:7.2f} s  {mb / t:8.1f} MB/s")
    print(f"redaction takes {best['redact'] / best['convert']:.1f}x the time of the conversion itself")


if __name__ == "__main__":
    main()
