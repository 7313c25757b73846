#!/usr/bin/env python3
"""Play a capture as if its agent were running: a test double for any agent CLI.

    play_capture.py CAPTURE [--speed X]

Writes the capture's agent lines on stdout, byte for byte, one per line, and
flushes after each.  The capture's format is decided from its first line:

* a tap capture (``{"t":..., "from":..., "msg":...}`` per line): agent lines are
  paced by their recorded ``t`` (the gap to the line before, divided by X); a
  ``from: "client"`` line is where the agent read its stdin, so the player reads
  one line from stdin there before going on.  If stdin ends instead, the player
  stops and exits 0, as an agent does when its input closes between turns.
* a plain capture (the agent's stdout, one message per line): every line is an
  agent line; there are no times, so they are written without pauses.  stdin is
  not read.

``--speed X`` divides every pause by X (default 1, real time); ``--speed 0``
plays without pauses.  Standard library only, so any test can run it with any
Python.  Exit codes: 0 played (or stdin ended), 2 bad arguments or unreadable
capture.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime
from pathlib import Path

_MSG_KEY = b'"msg":'


def _tap_parts(line: bytes) -> tuple[float, str, bytes]:
    """(t in seconds, from, the wire line verbatim) of one tap line."""
    record = json.loads(line)
    # a tap line is '{"t":...,"from":...,"msg":' + the wire line + '}': slice it
    # out rather than re-encode it, so the bytes are the agent's own
    start = line.index(_MSG_KEY) + len(_MSG_KEY)
    wire = line[start:].rstrip()[:-1].strip()
    if json.loads(wire) != record["msg"]:
        raise ValueError("the msg of a tap line is not the rest of the line")
    t = datetime.fromisoformat(record["t"].replace("Z", "+00:00")).timestamp()
    return t, record["from"], wire


def _is_tap(line: bytes) -> bool:
    try:
        record = json.loads(line)
    except ValueError:
        return False
    return isinstance(record, dict) and list(record)[:3] == ["t", "from", "msg"]


def play(capture: Path, speed: float) -> int:
    lines = [ln for ln in capture.read_bytes().splitlines() if ln.strip()]
    out = sys.stdout.buffer
    if not lines or not _is_tap(lines[0]):
        for line in lines:
            out.write(line + b"\n")
            out.flush()
        return 0
    last: float | None = None
    for line in lines:
        t, from_, wire = _tap_parts(line)
        if from_ == "client":
            if not sys.stdin.buffer.readline():
                return 0  # the client closed stdin: the agent stops
        elif last is not None and speed > 0 and t > last:
            time.sleep((t - last) / speed)
        if from_ == "agent":
            out.write(wire + b"\n")
            out.flush()
        last = t
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="play_capture", description="Play a capture's agent lines on stdout.")
    parser.add_argument("capture", type=Path)
    parser.add_argument("--speed", type=float, default=1.0, help="divide pauses by this (0: no pauses)")
    args = parser.parse_args(argv)
    if args.speed < 0:
        parser.error("--speed must be 0 or more")
    try:
        return play(args.capture, args.speed)
    except (OSError, ValueError, KeyError) as exc:
        print(f"play_capture: {args.capture}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
