"""An earlier revision of normalize measured on the same sessions as this tree: its
ratio to the floor, per adapter.

    .venv/bin/python benchmarks/then.py REV [PROTOCOL ...]             # this tree's captures
    .venv/bin/python benchmarks/then.py REV [PROTOCOL ...] --mix REV2  # the captures of REV2

A target such as "twice the ratio of that day" compares two trees; their ratios are
comparable only on the same input, and the kits' captures change from day to day.  This
extracts ``src/`` of REV (``git archive``) into a temporary folder and measures it in a
child process that imports it first, with this tree's harness (``run.throughput``: the
same generated sessions, the same floor, best of the same rounds).  REV converts through
its public ``events`` and ``encode``, one event at a time, as its own harness measured it;
it runs as pure Python (a compiled build of REV is not made).

The child reads the adapters REV has by the entry points of the installed distribution
(this tree's): the protocols REV did not have yet are left out.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, BinaryIO

import _gen
import run


def _convert(stream: Any, protocol: str, out: BinaryIO) -> None:
    """``normalize convert -p PROTOCOL`` of any revision: its public events and encode."""
    from normalize import encode, events, iter_records

    write = out.write
    for ev in events(iter_records(stream), protocol=protocol):
        write(encode(ev) + b"\n")


def _adapters_of_then() -> list[str]:
    """Make the registry of the revision imported hold the adapters it has (the installed
    entry points name this tree's, some of which it lacks); their protocol names."""
    from importlib.metadata import entry_points

    from normalize import _registry

    found: dict[str, Any] = {}
    for ep in entry_points(group=_registry.ENTRY_POINT_GROUP):
        try:
            found[ep.name] = ep.load()
        except ModuleNotFoundError:
            continue  # an adapter added after that revision
    _registry._loaded = found  # (the revision's own cache of them)
    return sorted(found)


def child(src: str, protocols: list[str], lines: int, max_mb: int, rounds: int) -> int:
    import normalize

    here = Path(normalize.__file__).resolve()
    if not here.is_relative_to(Path(src).resolve()):
        print(f"then.py: imported {here}, not the revision's copy under {src}", file=sys.stderr)
        return 2
    known = _adapters_of_then()
    run.convert = _convert  # (the harness's normalize path, for this process)
    for p in protocols or _gen.protocols():
        if p not in known:
            print(f"{p:26} (not in that revision)", flush=True)
            continue
        r = run.throughput(p, lines, max_mb * 1_000_000, rounds)
        peer = f"  normalize/peer {r['peer_ratio']:.2f}x" if "peer_ratio" in r else ""
        print(f"{p:26} {r['lines']:>8,} lines  normalize/floor {r['floor_ratio']:.2f}{peer}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("rev", help="the revision of normalize to measure")
    ap.add_argument("protocols", nargs="*", help="adapters to measure (default: all with captures)")
    ap.add_argument("--mix", metavar="REV2", help="make the sessions of the captures of revision REV2")
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--max-mb", type=int, default=48)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--child", metavar="SRC", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child, args.protocols, args.lines, args.max_mb, args.rounds)
    said = run.revision(args.rev)
    with tempfile.TemporaryDirectory(prefix="normalize-then-") as tmp:
        src = str(run.git_archive(args.rev, "src", tmp))
        env = dict(os.environ, PYTHONPATH=src)  # (only the revision's copy, not this tree's)
        forwarded = [f"--lines={args.lines}", f"--max-mb={args.max_mb}", f"--rounds={args.rounds}"]
        if args.mix:
            kits, mix_said = run.extract_kits(args.mix, str(Path(tmp) / "mix"))
            env[_gen.MIX_ENV] = str(kits)
            print(f"sessions made of the captures of {mix_said}")
        else:
            print("sessions made of this tree's captures")
        print(f"normalize at {said}, pure Python", flush=True)
        cmd = [sys.executable, __file__, args.rev, *args.protocols, *forwarded, "--child", src]
        return subprocess.run(cmd, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
