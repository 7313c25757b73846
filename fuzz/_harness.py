"""What every fuzz harness shares: the input format, the checks, the corpus, the runner.

An input is bytes split on ``\\n`` into native messages; a message starting with ``>`` is
fed as written by the client (the ``>`` removed), any other as written by the agent.  One
input is checked twice over a fresh Session: in default mode nothing may raise and every
event must encode to JSON that decodes again, with seq 1, 2, 3, ... without gaps; in strict
mode only :class:`normalize.NormalizeError` may escape.

Not part of the test suite (tests/): run by hand, see fuzz/README.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import traceback
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["normalize"]):
    import normalize
    from normalize import Message, NormalizeError, Session, SessionEvent

    normalize.available()  # imports every adapter here, so atheris instruments them

ROOT = Path(__file__).resolve().parent.parent


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def messages(data: bytes) -> list[tuple[bytes, normalize.Direction]]:
    """The fuzz input format: one message per line, ``>`` marks a client line."""
    out: list[tuple[bytes, normalize.Direction]] = []
    for line in data.split(b"\n"):
        if line.startswith(b">"):
            out.append((line[1:], "client"))
        else:
            out.append((line, "agent"))
    return out


def check(protocol: str, data: bytes) -> None:
    """The invariant of every harness (the first line of each fuzz_<protocol>.py)."""
    fed = messages(data)
    session = Session(normalize.adapter_class(protocol)(), clock=lambda: 0.0)
    events = []
    for message, from_ in fed:
        events += session.feed(message, from_)
    events += session.close()
    seq = 0
    for event in events:
        # every event is valid JSON (the grammar: 1e400 is valid, NaN is not)
        json.loads(normalize.encode(event), parse_constant=_no_constant)
        if isinstance(event, SessionEvent):
            seq += 1
            assert event.event.seq == seq, f"seq {event.event.seq} where {seq} was due"
    strict = Session(normalize.adapter_class(protocol)(), clock=lambda: 0.0, strict=True)
    try:
        for message, from_ in fed:
            for event in strict.feed(message, from_):
                normalize.encode(event)
        strict.close()
    except NormalizeError:
        pass


#: Seeds are runs of this many consecutive messages of a capture, at most SEED_BYTES long,
#: so one execution stays fast (whole captures reach megabytes).
SEED_LINES = 24
SEED_BYTES = 32 * 1024


def corpus_seeds(protocol: str) -> list[bytes]:
    """Windows over every capture of the protocol (and its edge cases), in the fuzz input format."""
    seeds: list[bytes] = []
    captures = ROOT / "adapters" / protocol / "captures"
    edge_cases = ROOT / "adapters" / protocol / "captures" / "edge-cases"
    for path in [*sorted(captures.rglob("*.jsonl")), *sorted(edge_cases.glob("*.jsonl"))]:
        lines = [
            (b">" if r.from_ == "client" else b"") + r.data
            for r in normalize.read_records([path])
            if isinstance(r, Message) and len(r.data) < SEED_BYTES
        ]
        for start in range(0, len(lines), SEED_LINES // 2):
            window = lines[start : start + SEED_LINES]
            while len(window) > 1 and sum(map(len, window)) > SEED_BYTES:
                window.pop()
            seeds.append(b"\n".join(window))
    return seeds


def main(protocol: str) -> None:
    """Write the seed corpus (fuzz/corpus/<protocol>/) if absent, then fuzz with atheris' args."""
    corpus = ROOT / "fuzz" / "corpus" / protocol
    if not corpus.is_dir():
        corpus.mkdir(parents=True)
        for i, seed in enumerate(corpus_seeds(protocol)):
            (corpus / f"seed-{i:03d}").write_bytes(seed)
    argv = list(sys.argv)
    if not any(not a.startswith("-") for a in argv[1:]):
        argv.append(str(corpus))
    if not any(a.startswith("-max_len=") for a in argv[1:]):
        argv.append(f"-max_len={SEED_BYTES * 2}")

    collect = os.environ.get("NORMALIZE_FUZZ_COLLECT")
    seen: set[str] = set()

    def one(data: bytes) -> None:
        if collect is None:
            check(protocol, data)
            return
        try:
            check(protocol, data)
        except Exception as exc:  # noqa: BLE001 - collect mode: every failure is written down
            # one file per distinct place of failure, and the fuzzing goes on
            frames = traceback.extract_tb(exc.__traceback__)
            where = f"{type(exc).__name__}:{frames[-1].filename}:{frames[-1].lineno}"
            if where not in seen:
                seen.add(where)
                name = f"crash-{hashlib.sha1(where.encode()).hexdigest()[:12]}"
                Path(collect, name).write_bytes(data)
                trace = "".join(traceback.format_exception(exc))
                Path(collect, name + ".txt").write_text(f"{where}\n{trace}")
                print(f"COLLECTED {name} {where}", flush=True)

    atheris.Setup(argv, one)
    atheris.Fuzz()
