"""How much an export over unchanged files saves: the first run against the next ones.

    .venv/bin/python benchmarks/export_incremental.py [--copies 40] [--jobs 1]

Builds a folder of session files (the Claude transcript and Codex rollout captures,
``--copies`` times each, as a home folder with many sessions would hold), exports it
to DuckDB, then exports it again unchanged, then again after touching every file
(same content, new modification time: each file is hashed instead of read).  Prints
the times and their ratios; the ratios, not the times, are what holds across machines.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("claude-transcript", "codex-rollout")


def build(folder: Path, copies: int) -> int:
    files = 0
    for n in range(copies):
        for protocol in SOURCES:
            src = ROOT / "adapters" / protocol / "captures"
            dst = folder / f"{protocol}-{n:03d}"
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("edge-cases"))
            files += sum(1 for _ in dst.rglob("*.jsonl"))
    return files


def export(folder: Path, db: Path, jobs: int) -> float:
    normalize = Path(sys.executable).parent / "normalize"
    start = time.perf_counter()
    subprocess.run(
        [str(normalize), "export", str(folder), "--duckdb", str(db), "-j", str(jobs)],
        check=False,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "sessions"
        files = build(folder, args.copies)
        db = Path(tmp) / "sessions.duckdb"
        first = export(folder, db, args.jobs)
        again = export(folder, db, args.jobs)
        for f in folder.rglob("*.jsonl"):
            os.utime(f)
        touched = export(folder, db, args.jobs)
    print(f"{files} files, --jobs {args.jobs}")
    print(f"first export:               {first:7.2f} s")
    print(f"again, unchanged:           {again:7.2f} s  ({first / again:.1f}x faster)")
    print(f"again, every file touched:  {touched:7.2f} s  ({first / touched:.1f}x faster)")


if __name__ == "__main__":
    main()
