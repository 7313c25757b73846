"""Instructions per native line of ``convert``, counted by valgrind: an A/B that noise does not move.

    .venv/bin/python benchmarks/instructions.py [PROTOCOL...] [--lines N] [--tree NAME=DIR ...]

Time on a shared machine moves by several percent from run to run, more than many
changes give.  The number of instructions a run executes hardly moves, so two trees
(or two builds: ``DIR`` is put first on ``PYTHONPATH``, as for ``scripts/build-compiled``)
can be told apart by a change of 1%.  For each tree and protocol, the harness's
generated session (``_gen``, ``N`` lines) is converted as ``run.py`` converts it, under
``valgrind --tool=callgrind``; a run that converts only its first 100 KB (imports,
caches, the first session) is subtracted, and the rest divided by the lines.

An instruction count is not a time: a copy of N bytes counts N instructions (``rep
movsb``), a cache miss counts nothing.  Nor does it see what depends on the clock: under
valgrind a line takes fifty times longer, so the last millisecond's text that
``format_ts`` keeps for messages without a native time is almost never reused, as it
is in a real run.  Read it beside the time (``run.py``, ``stages.py``).  Needs
valgrind; about a minute per protocol and tree.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT = ("claude-stream-json", "codex-exec-json", "hm-json")
#: what the counted process runs: ``run.convert`` of the first 100 KB (warm), then,
#: unless told ``warm``, of the whole generated session; the number of lines on stderr
_WORK = """
import io, os, sys
sys.path.insert(0, {here!r})
import _gen, run
protocol, lines, part = sys.argv[1], int(sys.argv[2]), sys.argv[3]
data, n = _gen.blob(_gen.load(protocol), lines, 1 << 30)
sink = open(os.devnull, "wb")
run.convert(io.BytesIO(data[: data.index(b"\\n", 100_000) + 1]), protocol, sink)
if part == "all":
    run.convert(io.BytesIO(data), protocol, sink)
print(n, file=sys.stderr)
"""


def _count(tree: str | None, protocol: str, lines: int, part: str) -> tuple[int, int]:
    """(instructions, lines) of one counted run."""
    env = dict(os.environ)
    if tree:
        env["PYTHONPATH"] = tree
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c"]
    cmd += [_WORK.format(here=str(HERE)), protocol, str(lines), part]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    total = re.search(r"Collected : (\d+)", proc.stderr)
    n = re.search(r"^(\d+)$", proc.stderr, re.MULTILINE)
    if total is None or n is None:
        raise RuntimeError(f"no count in valgrind's output:\n{proc.stderr[-2000:]}")
    return int(total.group(1)), int(n.group(1))


def per_line(tree: str | None, protocol: str, lines: int) -> float:
    whole, n = _count(tree, protocol, lines, "all")
    warm, _ = _count(tree, protocol, lines, "warm")
    return (whole - warm) / n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("protocols", nargs="*", default=list(DEFAULT))
    ap.add_argument("--lines", type=int, default=5_000)
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=DIR", help="a tree or build to count")
    args = ap.parse_args(argv)
    trees = [t.split("=", 1) for t in args.tree] or [["this", ""]]
    print("| adapter | " + " | ".join(name for name, _ in trees) + " |")
    print("| --- |" + " ---: |" * len(trees))
    for protocol in args.protocols:
        counts = [per_line(path or None, protocol, args.lines) for _, path in trees]
        cells = [f"{counts[0]:,.0f}"] + [f"{c:,.0f} ({c / counts[0] - 1:+.1%})" for c in counts[1:]]
        print(f"| {protocol} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
