"""Throughput of ``normalize export --parquet``: on this machine (``--jobs``) and on a Dask cluster of 1 and 2 workers.

The corpus is the kits' captures (edge cases left out) copied ``--copies`` times, the
ids and dates of each copy rewritten as ``_gen`` does, so every copy's sessions are
sessions of their own (file and folder names are kept, each copy in its own folder).

    .venv/bin/python benchmarks/scale.py --copies 20            # prints a Markdown table

A worker's memory is its peak RSS (``ru_maxrss``) after the run, read on the worker.
CPU time is counted in every process that did the work (this one, which lists the
inputs, and for Dask runs the scheduler and the commit; the pool's or the cluster's
workers), so MB per CPU-second says what a worker converts when it has a core of its
own, even on a machine busy with other jobs, where the wall times mean little.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _gen

from normalize.analytics import export


def corpus(out: Path, copies: int) -> tuple[int, int]:
    """Write the corpus; returns (files, bytes)."""
    files = size = 0
    captures = sorted(
        p
        for p in _gen.CAPTURES.glob("*/captures/**/*.jsonl")
        if p.is_file() and "edge-cases" not in p.parts and p.stat().st_size
    )
    for copy in range(copies):
        cache: dict[tuple[int, bytes], bytes] = {}
        for src in captures:
            dest = out / f"copy-{copy:03d}" / src.relative_to(_gen.CAPTURES)
            dest.parent.mkdir(parents=True, exist_ok=True)
            # prefixed ids fresh per copy
            data = src.read_bytes() if copy == 0 else _gen.rewritten(src.read_bytes(), copy, copy, cache)
            dest.write_bytes(data)
            files += 1
            size += len(data)
    return files, size


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu(who: int = resource.RUSAGE_SELF) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def run(inputs: Path, mode: str, n: int, task_mb: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="normalize-scale-") as tmp:
        out = Path(tmp) / "dataset"
        if mode == "local":
            c0 = _cpu() + _cpu(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            report = export([inputs], out, jobs=n)
            secs = time.perf_counter() - t0
            cpu = _cpu() + _cpu(resource.RUSAGE_CHILDREN) - c0  # the pool's processes are reaped by now
            workers_cpu = cpu
            worker_mb: list[float] = []
        else:
            from normalize.analytics._dask import connect

            with connect(f"local[{n}]") as client:
                client.run(lambda: None)  # the workers are up: their start is not the export's time
                w0 = sum(client.run(_cpu).values())
                c0 = _cpu()
                t0 = time.perf_counter()
                report = export([inputs], out, client=client, task_bytes=int(task_mb * (1 << 20)))
                secs = time.perf_counter() - t0
                workers_cpu = sum(client.run(_cpu).values()) - w0
                cpu = _cpu() - c0 + workers_cpu
                worker_mb = sorted(client.run(_peak_rss_mb).values())
    return {
        "mode": mode,
        "n": n,
        "task_mb": task_mb if mode == "dask" else None,
        "seconds": secs,
        "cpu": cpu,
        "workers_cpu": workers_cpu,
        "sessions": report.result.added,
        "tasks": report.tasks,
        "worker_peak_mb": worker_mb,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--copies", type=int, default=20)
    ap.add_argument("--task-mb", type=float, default=16)
    ap.add_argument("--keep", type=Path, help="write the corpus here and keep it")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="normalize-corpus-")) if args.keep is None else args.keep
    try:
        files, size = corpus(tmp, args.copies)
        mb = size / 1e6
        print(f"corpus: {files} files, {mb:.1f} MB ({args.copies} copies of the kits)")
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
        print()
        print(
            "| run | workers | tasks | seconds | MB/s | CPU s, all | CPU s, workers | MB per worker CPU-s "
            "| worker peak RSS (MB) |"
        )
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        for mode, n in (("local", 1), ("local", 2), ("dask", 1), ("dask", 2)):
            r = run(tmp, mode, n, args.task_mb)
            label = f"`--jobs {n}`" if mode == "local" else f"`--dask local[{n}]`, {args.task_mb:g} MB tasks"
            rss = ", ".join(f"{m:.0f}" for m in r["worker_peak_mb"]) or "-"
            print(
                f"| {label} | {n} | {r['tasks'] or '-'} | {r['seconds']:.1f} | {mb / r['seconds']:.1f} "
                f"| {r['cpu']:.1f} | {r['workers_cpu']:.1f} | {mb / r['workers_cpu']:.2f} | {rss} |",
                flush=True,
            )
        print(f"\n{r['sessions']} sessions; load average {os.getloadavg()[0]:.1f} at the end")
    finally:
        if args.keep is None:
            shutil.rmtree(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
