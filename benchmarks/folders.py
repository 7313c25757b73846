"""What finding and converting the sessions of one big folder costs per session, as it grows.

A Claude Code project folder holds every session ever run in that project, side by
side: thousands for a project in daily use.  This builds such a folder from the
claude-transcript captures of two layouts (2.0.x: sub-agent files ``agent-*.jsonl``
beside the sessions, read with the session their first line names; 2.1.x: a session's
sub-agents in ``<session>/subagents/``), copy after copy with fresh ids as ``_gen``
makes them, and measures, in this process (CPU time, best of ``--rounds``):

* find: ``find_inputs`` over the folder (detection, companions);
* convert: ``normalize convert FOLDER -o OUT/ --jobs 1``, into an empty folder;
* again: the same command once more, writing over its own outputs.

Each in milliseconds per session, for a small and a large folder; the last column is
the large folder's cost per session over the small one's: 1.0 when the cost grows
with the number of sessions, more when each session costs more the more there are.

    .venv/bin/python benchmarks/folders.py --copies 10 80
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import _gen

from normalize._cli import main as cli
from normalize._convert import find_inputs

LAYOUTS = ("claude-code-2.0.76", "claude-code-2.1.332")


def project(out: Path, copies: int) -> int:
    """A project folder of ``copies`` copies of the captures of each layout; the number of sessions."""
    root = _gen.CAPTURES / "claude-transcript" / "captures"
    files = sorted(p for v in LAYOUTS for p in (root / v).rglob("*") if p.is_file())
    sessions = 0
    for copy in range(copies):
        fresh = functools.partial(_gen.rewritten, copy=copy, ids=0, cache={})
        for src in files:
            case = src.relative_to(root).parts[2:]  # the case's folder is left out: one project folder
            name = [fresh(part.encode()).decode() for part in case]
            if name[-1].startswith("agent-") and len(name) == 1:  # 2.0.x: beside the sessions, one name per copy
                name[-1] = f"agent-{copy}{name[-1][len('agent-') :]}"
            dest = out.joinpath(*name)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(fresh(src.read_bytes()))
            sessions += len(name) == 1 and not name[-1].startswith("agent-") and name[-1].endswith(".jsonl")
    return sessions


def _best(fn: Callable[[], object], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def measure(copies: int, rounds: int) -> tuple[int, dict[str, float]]:
    with tempfile.TemporaryDirectory(prefix="normalize-folders-") as tmp:
        folder, out = Path(tmp) / "project", Path(tmp) / "out"
        n = project(folder, copies)
        found = [i for i in find_inputs([folder]) if not isinstance(i, Exception)]
        assert len(found) == n, (len(found), n)  # every session found once, every agent file read with its own

        def convert() -> None:
            with contextlib.redirect_stderr(io.StringIO()):
                code = cli(["convert", str(folder), "-o", f"{out}/", "--jobs", "1"])
            assert code == 0, code

        def fresh_convert() -> None:
            shutil.rmtree(out, ignore_errors=True)
            convert()

        ms = {
            "find": _best(lambda: list(find_inputs([folder])), rounds),
            "convert": _best(fresh_convert, rounds),
            "again": _best(convert, rounds),
        }
        return n, {k: v * 1000 / n for k, v in ms.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--copies", type=int, nargs=2, default=[10, 80], metavar=("SMALL", "LARGE"))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    small_n, small = measure(args.copies[0], args.rounds)
    large_n, large = measure(args.copies[1], args.rounds)
    print(f"| stage | {small_n:,} sessions: ms per session | {large_n:,} sessions: ms per session | large / small |")
    print("| --- | ---: | ---: | ---: |")
    for k in small:
        print(f"| {k} | {small[k]:.2f} | {large[k]:.2f} | {large[k] / small[k]:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
