"""Where the time of a connection's lines goes, by kind of message.

    .venv/bin/python benchmarks/kinds.py [PROTOCOL] [--lines N] [--rounds R] [--mix REV] [--top K]

For a JSON-RPC protocol (ACP, Codex app-server; any protocol whose lines have a
``method``), on the harness's generated session (``_gen``), each message is fed to one
``Connection`` and its events encoded as ``convert`` encodes them, timed message by
message (``time.perf_counter_ns``), then the msgspec floor of ``run.py`` (a generic
decode and encode) of the same line.  A message's kind is its method, or
``resp:METHOD`` for the answer to a request of that method.  Printed per kind, best of
``R`` rounds: its lines, its share of normalize's time, microseconds per line for
normalize and for the floor, their ratio, and the events it gives per line.

Each message timed alone carries about 0.1 µs of the timer's own cost, and a kind's
events are those its message gives at once (a Session that holds its first messages
until the session is named gives them all with the message naming it).  Read the
shares, and the kinds far from the whole's ratio; ``run.py`` gives the ratio itself.
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from collections import Counter

import _gen
import msgspec
import run

from normalize._convert import iter_records, open_session
from normalize._lines import Message
from normalize._pipeline import encode_lines
from normalize._registry import adapter_class

_HEAD = msgspec.json.Decoder(
    msgspec.defstruct("_Head", [("method", "str | None", None), ("id", "int | str | None", None)])
)


def kinds_of(messages: list[Message]) -> list[str]:
    """Each message's kind: its method, ``resp:METHOD`` for an answer, ``(not JSON-RPC)``."""
    asked: dict[tuple[str, int | str], str] = {}
    out: list[str] = []
    for m in messages:
        try:
            head = _HEAD.decode(m.data)
        except msgspec.DecodeError:
            out.append("(not JSON-RPC)")
            continue
        if head.method is None:
            other = "client" if m.from_ == "agent" else "agent"
            out.append("resp:" + asked.pop((other, head.id), "?") if head.id is not None else "(no method)")
            continue
        if head.id is not None:
            asked[(m.from_, head.id)] = head.method
        out.append(head.method)
    return out


def by_kind(protocol: str, lines: int, rounds: int) -> tuple[int, dict[str, tuple[int, int, int, int]]]:
    """Lines, and per kind: (lines, normalize's ns, the floor's ns, events), best of rounds."""
    data, _ = _gen.blob(_gen.load(protocol), lines, 1 << 30)
    messages = [r for r in iter_records(io.BytesIO(data)) if isinstance(r, Message)]
    kinds = kinds_of(messages)
    count = Counter(kinds)
    cls = adapter_class(protocol)
    decode, encode = msgspec.json.Decoder().decode, msgspec.json.Encoder().encode
    clock = time.perf_counter_ns
    best: dict[str, tuple[int, int, int, int]] = {}
    for _ in range(rounds):
        spent: Counter[str] = Counter()
        floor: Counter[str] = Counter()
        events: Counter[str] = Counter()
        connection = open_session(cls())
        feed = connection.feed
        for m, kind in zip(messages, kinds, strict=True):
            t0 = clock()
            out = feed(m.data, m.from_, t=m.t)
            encode_lines(out)
            t1 = clock()
            encode(decode(m.data))
            t2 = clock()
            spent[kind] += t1 - t0
            floor[kind] += t2 - t1
            events[kind] += len(out)
        connection.close()
        for kind in spent:
            if kind not in best or spent[kind] < best[kind][1]:
                best[kind] = (count[kind], spent[kind], floor[kind], events[kind])
    return len(messages), best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("protocol", nargs="?", default="codex-app-server")
    ap.add_argument("--lines", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--top", type=int, default=15, help="kinds shown, by share (the rest summed)")
    ap.add_argument("--mix", metavar="REV", help="sessions made of the captures of git revision REV")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="normalize-kinds-") as tmp:
        if args.mix:
            _gen.CAPTURES, said = run.extract_kits(args.mix, tmp)
            print(f"Sessions made of the captures of {said}.\n")
        n, best = by_kind(args.protocol, args.lines, args.rounds)
    total = sum(spent for _, spent, _, _ in best.values())
    total_floor = sum(floor for _, _, floor, _ in best.values())
    print(f"{args.protocol}: {n:,} lines, {total / n / 1000:.2f} µs a line, floor {total_floor / n / 1000:.2f}\n")
    print("| kind | lines | share | µs/line | floor µs/line | floor/normalize | events/line |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    rows = sorted(best.items(), key=lambda kv: -kv[1][1])
    shown, rest = rows[: args.top], rows[args.top :]
    if rest:
        summed = tuple(sum(r[1][i] for r in rest) for i in range(4))
        shown.append((f"({len(rest)} other kinds)", (summed[0], summed[1], summed[2], summed[3])))
    for kind, (lines, spent, floor, events) in shown:
        print(
            f"| `{kind}` | {lines:,} | {spent / total:.1%} | {spent / lines / 1000:.2f} | {floor / lines / 1000:.2f}"
            f" | {floor / spent:.2f} | {events / lines:.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
