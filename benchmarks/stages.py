"""Where the time of one native line goes: a per-stage breakdown of ``convert``.

    .venv/bin/python benchmarks/stages.py [PROTOCOL...] [--lines N] [--rounds R]

For each protocol, on the same generated session as the harness (``_gen``), in one
process, the best of several interleaved rounds of CPU time (``time.process_time``),
in microseconds per native line:

* read: ``iter_records`` (chunks -> lines -> records);
* decode: every ``msgspec.json.Decoder.decode`` call the adapter makes, replayed
  alone (the calls of one pass are recorded, then timed by themselves);
* adapter: the adapter's ``feed`` on every message, minus decode;
* session: ``Session.feed`` minus the adapter's ``feed`` (envelope, seq, turn state,
  the core's ledgers);
* connection: for a protocol that carries several sessions on one connection (ACP,
  Codex app-server), what the ``Connection`` adds to one ``Session`` fed every
  message: routing each message to its session, opening the sessions (each one fed
  the connection's handshake); 0 for the others;
* batching: the rest of ``convert`` up to its events (its batches made and dropped,
  none encoded): the loop around the stages above, and what those stages, timed apart,
  do not count (negative where they cost more apart than together);
* encode+write: what encoding the events and writing them to ``/dev/null`` add to the
  whole ``convert`` (``total``, timed as the harness times it), the events encoded
  while they are fresh;
* encode apart: the same events encoded by themselves as ``convert`` encodes them
  (``encode_lines``, a batch at a time; ``encode`` of each in a tree that has no
  ``encode_lines``), all made beforehand: on a machine of small caches up to twice
  encode+write, since the events are no longer in the cache; not part of the sum.

The first stages are measured apart, so they add up to the path up to its events only
roughly; ``total`` is the whole ``convert`` path of ``run.py``, ``floor`` the msgspec
floor of ``run.py`` on the same lines.  CPU time, not wall time, because the
machine may be shared; compare the stages of one run with each other.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import _gen
import msgspec
import run

from normalize import Session, encode

try:
    from normalize._codec import encode_lines
except ImportError:  # measuring an older tree
    encode_lines = None  # type: ignore[assignment]
from normalize import _convert
from normalize._convert import iter_records, open_session
from normalize._lines import Message
from normalize._registry import adapter_class


class _Recorder:
    """Stands in for a module-level decoder: decodes, and remembers what it was given."""

    def __init__(self, dec: Any, calls: list[tuple[Any, Any]]) -> None:
        self._dec = dec
        self._calls = calls

    def decode(self, data: Any) -> Any:
        self._calls.append((self._dec, data))
        return self._dec.decode(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._dec, name)


def _decoder_modules(cls: type) -> list[ModuleType]:
    """The adapter's module and the adapter helper modules it uses."""
    mods = [sys.modules[cls.__module__]]
    mods += [m for name, m in sys.modules.items() if name.startswith("normalize.adapters._") and m is not None]
    return mods


def _record_decodes(cls: type, messages: list[Message]) -> list[tuple[Any, Any]]:
    calls: list[tuple[Any, Any]] = []
    patched: list[tuple[ModuleType, str, Any]] = []
    for mod in _decoder_modules(cls):
        for name, value in list(vars(mod).items()):
            if isinstance(value, msgspec.json.Decoder):
                patched.append((mod, name, value))
                setattr(mod, name, _Recorder(value, calls))
    try:
        adapter = cls()
        for m in messages:
            adapter.feed(m.data, m.from_)
    finally:
        for mod, name, value in patched:
            setattr(mod, name, value)
    return calls


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def breakdown(protocol: str, lines: int, max_bytes: int, rounds: int) -> dict[str, float]:
    template = _gen.load(protocol)
    data, n = _gen.blob(template, lines, max_bytes)
    cls = adapter_class(protocol)
    messages = [r for r in iter_records(io.BytesIO(data)) if isinstance(r, Message)]
    calls = _record_decodes(cls, messages)
    events: list[Any] = []
    session = Session(cls())
    for m in messages:
        events += session.feed(m.data, m.from_, t=m.t)
    events += session.close()
    encoded = [encode(ev) for ev in events]
    sink = open(os.devnull, "wb")  # noqa: SIM115 - closed below

    def read() -> None:
        for _ in iter_records(io.BytesIO(data)):
            pass

    def decode() -> None:
        for dec, payload in calls:
            try:  # noqa: SIM105 - cheaper than contextlib.suppress, in a timed loop
                dec.decode(payload)
            except msgspec.DecodeError:  # the adapter reports these: decoding them is part of its work
                pass

    def adapter() -> None:
        a = cls()
        feed = a.feed
        for m in messages:
            feed(m.data, m.from_)

    def fed(opener: Callable[[Any], Any]) -> Callable[[], None]:
        """Every message fed to what ``opener`` makes of a new adapter, then closed."""

        def run() -> None:
            s = opener(cls())
            feed = s.feed
            for m in messages:
                feed(m.data, m.from_, t=m.t)
            s.close()

        return run

    session_feed = fed(Session)  # one Session, whatever the protocol
    connection_feed = fed(open_session)  # a Connection for a protocol of several sessions

    batches = [events[i : i + 600] for i in range(0, len(events), 600)]

    def encode_all() -> None:
        if encode_lines is None:  # a tree from before encode_lines: one encode per event
            for ev in events:
                encode(ev)
            return
        for batch in batches:
            encode_lines(batch)

    def unencoded() -> None:
        """``convert`` up to its events: every batch made, none encoded nor written (in a
        tree from before ``NormalizedLines``, its public ``events``, consumed)."""
        made = getattr(_convert, "NormalizedLines", None)
        if made is None:
            for _ in _convert.events(iter_records(io.BytesIO(data)), protocol=protocol):
                pass
            return
        lines = made(iter_records(io.BytesIO(data)), protocol=protocol)
        for _ in lines._batches(*lines._open(), _convert.BATCH):
            pass

    def convert() -> None:
        run.convert(io.BytesIO(data), protocol, sink)

    fns: dict[str, Callable[[], object]] = {
        "read": read,
        "decode": decode,
        "adapter": adapter,
        "session": session_feed,
        "encode": encode_all,
        "total": convert,
        "unencoded": unencoded,
        "floor": lambda: run.floor(data, sink),
    }
    if cls.routing is not None:
        fns["connection"] = connection_feed
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            best[name] = min(best[name], _timed(fn))
    sink.close()
    us = {k: v * 1e6 / n for k, v in best.items()}
    out = {
        "read": us["read"],
        "decode": us["decode"],
        "adapter": us["adapter"] - us["decode"],
        "session": us["session"] - us["adapter"],
        "connection": us.get("connection", us["session"]) - us["session"],
    }
    # the rest of the path up to its events: the batching loop, and what the stages timed
    # apart do not see (negative when they cost more apart than together)
    out["batching"] = us["unencoded"] - sum(out.values())
    # what encoding and writing add to the whole path, its events encoded while they are
    # fresh in the cache; the same events encoded apart, made beforehand, cost up to
    # twice as much on a machine of small caches
    out["encode+write"] = us["total"] - us["unencoded"]
    out["encode apart"] = us["encode"]
    out["total"] = us["total"]
    out["floor"] = us["floor"]
    out["events/line"] = len(events) / n
    out["encoded bytes/line"] = sum(map(len, encoded)) / n
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("protocols", nargs="*", default=["claude-stream-json", "codex-exec-json", "hm-json"])
    ap.add_argument("--lines", type=int, default=20_000)
    ap.add_argument("--max-mb", type=float, default=8)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    cols = ["read", "decode", "adapter", "session", "connection", "batching", "encode+write", "total", "floor"]
    cols += ["encode apart"]
    print("| adapter | " + " | ".join(cols) + " | events/line |")
    print("| --- |" + " ---: |" * (len(cols) + 1))
    for p in args.protocols:
        r = breakdown(p, args.lines, int(args.max_mb * 1_000_000), args.rounds)
        cells = " | ".join(f"{r[c]:.1f}" for c in cols)
        print(f"| {p} | {cells} | {r['events/line']:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
