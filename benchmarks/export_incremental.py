"""How much an export over unchanged files saves: the first run against the next ones.

    .venv/bin/python benchmarks/export_incremental.py [--copies 40] [--jobs 1] [--dask N]

Builds a folder of session files (the Claude transcript and Codex rollout captures,
``--copies`` times each, as a home folder with many sessions would hold), exports it
to DuckDB, then exports it again unchanged, then again after touching every file
(same content, new modification time: each file is hashed instead of read).  Prints
the times and their ratios; the ratios, not the times, are what holds across machines.

With ``--dask N``, the same three exports to a Parquet dataset on a local Dask cluster
of N worker processes, started once for the three (``normalize.analytics.export`` with
a client): the client compares what it lists with the stamps and reads no file, so a
touched file is read again by a worker.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


def on_cluster(workers: int) -> tuple[Callable[[Path, Path], float], Callable[[], None]]:
    """An export to a Parquet dataset on a local cluster of ``workers`` processes, and its shutdown."""
    import importlib

    from normalize.analytics import export as export_api

    distributed: Any = importlib.import_module("distributed")  # untyped

    cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
    client = distributed.Client(cluster)

    def run(folder: Path, dataset: Path) -> float:
        start = time.perf_counter()
        export_api([folder], dataset, client=client)
        return time.perf_counter() - start

    def stop() -> None:
        client.close()
        cluster.close()

    return run, stop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--dask", type=int, metavar="N", help="on a local Dask cluster of N workers instead")
    args = parser.parse_args()

    def on_this_machine(folder: Path, db: Path) -> float:
        return export(folder, db, args.jobs)

    run, stop = on_cluster(args.dask) if args.dask else (on_this_machine, lambda: None)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "sessions"
            files = build(folder, args.copies)
            db = Path(tmp) / ("dataset" if args.dask else "sessions.duckdb")
            first = run(folder, db)
            again = run(folder, db)
            for f in folder.rglob("*.jsonl"):
                os.utime(f)
            touched = run(folder, db)
    finally:
        stop()
    print(f"{files} files, " + (f"a local Dask cluster of {args.dask} workers" if args.dask else f"--jobs {args.jobs}"))
    print(f"first export:               {first:7.2f} s")
    print(f"again, unchanged:           {again:7.2f} s  ({first / again:.1f}x faster)")
    print(f"again, every file touched:  {touched:7.2f} s  ({first / touched:.1f}x faster)")


if __name__ == "__main__":
    main()
