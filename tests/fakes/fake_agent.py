"""A fake agent: plays a capture's agent lines on stdout and reads the client lines on stdin.

    python fake_agent.py CAPTURE [--speed X] [--max-gap S] [--exit N] [--hang] [--pid-file F] [--stderr TEXT]

Agent lines are written byte for byte (each with a newline, flushed), paced by
the capture's ``t`` (tap files) divided by ``--speed`` and capped at
``--max-gap`` seconds; ``--speed 0`` writes as fast as possible.  At a client
line the agent reads one line from stdin and exits 3 if it is not that line,
byte for byte.  At the end: ``--hang`` sleeps until killed; otherwise it reads
stdin to its end when the capture had client lines, then exits with ``--exit``.
Standard library only, so it starts fast.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime
from pathlib import Path

_MSG = b',"msg":'


def wire_lines(capture: Path) -> list[tuple[str, float | None, bytes]]:
    """(from, t in seconds or None, the wire line) for each line of a capture."""
    out: list[tuple[str, float | None, bytes]] = []
    for raw in capture.read_bytes().splitlines():
        if not raw.strip():
            continue
        if raw.startswith(b'{"t"') and _MSG in raw:
            cut = raw.index(_MSG)
            head = json.loads(raw[:cut] + b"}")
            t = datetime.fromisoformat(head["t"]).timestamp()
            out.append((head["from"], t, raw[cut + len(_MSG) : -1]))
        else:
            out.append(("agent", None, raw))
    return out


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("capture", type=Path)
    p.add_argument("--speed", type=float, default=1.0)
    p.add_argument("--max-gap", type=float, default=0.05)
    p.add_argument("--exit", type=int, default=0)
    p.add_argument("--hang", action="store_true")
    p.add_argument("--pid-file", type=Path)
    p.add_argument("--stderr", default="", help="write this to stderr first")
    args = p.parse_args()
    if args.stderr:
        sys.stderr.write(args.stderr)
        sys.stderr.flush()
    if args.pid_file:
        args.pid_file.write_text(str(os.getpid()))
    out, inp = sys.stdout.buffer, sys.stdin.buffer
    prev: float | None = None
    had_client = False
    for from_, t, line in wire_lines(args.capture):
        if t is not None and prev is not None and args.speed > 0:
            time.sleep(min(max(t - prev, 0.0) / args.speed, args.max_gap))
        prev = t if t is not None else prev
        if from_ == "client":
            had_client = True
            got = inp.readline()
            if got.rstrip(b"\n") != line:
                sys.stderr.write(f"fake_agent: expected {line[:80]!r}, got {got[:80]!r}\n")
                return 3
            continue
        out.write(line + b"\n")
        out.flush()
    if args.hang:
        while True:
            time.sleep(60)
    if had_client:
        inp.read()
    return int(args.exit)


if __name__ == "__main__":
    sys.exit(main())
