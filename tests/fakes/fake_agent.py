"""A fake agent: plays a capture's agent lines on stdout and reads the client lines on stdin.

    python -S fake_agent.py CAPTURE [--speed X] [--max-gap S] [--exit N] [--hang] [--pid-file F] [--stderr TEXT]

Agent lines are written byte for byte (each with a newline, flushed), paced by
the capture's ``t`` (tap files) divided by ``--speed`` and capped at
``--max-gap`` seconds; ``--speed 0`` writes as fast as possible.  At a client
line the agent reads one line from stdin and exits 3 if it is not that line,
byte for byte.  At the end: ``--hang`` sleeps until killed; otherwise it reads
stdin to its end when the capture had client lines, then exits with ``--exit``.

It starts a thousand times a test run, so it imports next to nothing: the options are
read by hand, and a tap line's head is cut apart, not decoded (its form is fixed:
``{"t":"<RFC 3339>","from":"<side>","msg":…}``, shared/captures/README.md), its time
read only when the lines are paced.
"""

from __future__ import annotations

import os
import sys
import time

_MSG = b',"msg":'
_T = b'{"t":"'
_FROM = b'","from":"'


def _parts(raw: bytes) -> tuple[str, str | None, bytes]:
    """(from, t as written or None, the wire line) of one line of a capture."""
    if raw.startswith(_T) and _MSG in raw:
        cut = raw.index(_MSG)
        head = raw[:cut]
        at = head.find(_FROM)
        if at > 0 and head.endswith(b'"'):
            return head[at + len(_FROM) : -1].decode(), head[len(_T) : at].decode(), raw[cut + len(_MSG) : -1]
    return "agent", None, raw


def _seconds(t: str) -> float:
    from datetime import datetime  # only when pacing

    return datetime.fromisoformat(t).timestamp()


def _lines(capture: str | os.PathLike[str]) -> list[tuple[str, str | None, bytes]]:
    """:func:`_parts` of each line of a capture (blank lines left out)."""
    with open(capture, "rb") as f:
        return [_parts(raw) for raw in f.read().splitlines() if raw.strip()]


def wire_lines(capture: str | os.PathLike[str]) -> list[tuple[str, float | None, bytes]]:
    """(from, t in seconds or None, the wire line) for each line of a capture."""
    return [(from_, None if t is None else _seconds(t), line) for from_, t, line in _lines(capture)]


class _Options:
    def __init__(self, argv: list[str]) -> None:
        self.speed = 1.0
        self.max_gap = 0.05
        self.exit = 0
        self.hang = False
        self.pid_file: str | None = None
        self.stderr = ""  # written to stderr first
        self.capture = ""
        it = iter(argv)
        for arg in it:
            if arg == "--speed":
                self.speed = float(next(it))
            elif arg == "--max-gap":
                self.max_gap = float(next(it))
            elif arg == "--exit":
                self.exit = int(next(it))
            elif arg == "--hang":
                self.hang = True
            elif arg == "--pid-file":
                self.pid_file = next(it)
            elif arg == "--stderr":
                self.stderr = next(it)
            elif arg.startswith("--") or self.capture:
                raise SystemExit(f"fake_agent: unexpected argument {arg!r}")
            else:
                self.capture = arg
        if not self.capture:
            raise SystemExit("fake_agent: no capture given")


def main() -> int:
    args = _Options(sys.argv[1:])
    if args.stderr:
        sys.stderr.write(args.stderr)
        sys.stderr.flush()
    if args.pid_file:
        with open(args.pid_file, "w") as f:
            f.write(str(os.getpid()))
    out, inp = sys.stdout.buffer, sys.stdin.buffer
    prev: float | None = None
    had_client = False
    for from_, written, line in _lines(args.capture):
        if written is not None and args.speed > 0:
            t = _seconds(written)
            if prev is not None:
                time.sleep(min(max(t - prev, 0.0) / args.speed, args.max_gap))
            prev = t
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
    return args.exit


if __name__ == "__main__":
    sys.exit(main())
