"""The live-relay invariant, without atheris: shared by fuzz_wiretap.py and tests/test_tap.py.

Chunks of bytes from either side go through the relay's side channel (``RelaySide``
around a ``Wiretap``) as ``normalize tap`` passes them:

* bytes out equal bytes in: each chunk comes back unchanged for forwarding, whatever
  normalizing made of it, and nothing raises;
* normalizing reports nothing but a protocol it cannot detect (and only when none was given);
* the recording gives the wire lines back: per side, one tap line per non-blank line, the
  line spliced byte for byte (read back, without the JSON blanks around its value), or
  (not JSON) a JSON string holding it, equal to the line when it is UTF-8;
* every event encodes to valid JSON, and ``seq`` counts 1, 2, 3, ... without a gap.
"""

from __future__ import annotations

import json

import msgspec

import normalize
from normalize import DetectionError, Direction, SessionEvent, Wiretap
from normalize._model import _Core
from normalize._tap import RelaySide

_BOM = b"\xef\xbb\xbf"


class _TapLine(msgspec.Struct):
    t: str
    from_: str = msgspec.field(name="from")
    msg: msgspec.Raw


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def wire_lines(data: bytes) -> list[bytes]:
    """The lines of one side as the recording keeps them: BOM, ``\\r`` and blank lines aside."""
    if data.startswith(_BOM):
        data = data[3:]
    lines = []
    for line in data.split(b"\n"):
        if line.endswith(b"\r"):
            line = line[:-1]
        if line.strip():
            lines.append(line)
    return lines


def check_relay(protocol: str | None, chunks: list[tuple[Direction, bytes]]) -> None:
    recorded: list[bytes] = []
    events: list[_Core] = []
    errors: list[Exception] = []
    wiretap = Wiretap(protocol=protocol, clock=lambda: 0.0, record=recorded.append)
    side = RelaySide(wiretap, events.extend, errors.append)
    sent: dict[str, list[bytes]] = {"agent": [], "client": []}
    out: dict[str, list[bytes]] = {"agent": [], "client": []}
    for from_, data in chunks:
        sent[from_].append(data)
        out[from_].append(side.take(data, from_))
        side.flush()
    side.close()
    for from_ in ("agent", "client"):
        assert b"".join(out[from_]) == b"".join(sent[from_]), f"the {from_}'s bytes were not forwarded unchanged"
    for exc in errors:
        assert protocol is None, f"normalizing raised {exc!r}"
        assert isinstance(exc, DetectionError), f"normalizing raised {exc!r}"
    got: dict[str, list[bytes]] = {"agent": [], "client": []}
    for rec in recorded:
        assert rec.endswith(b"\n")
        tap = msgspec.json.decode(rec, type=_TapLine)
        got[tap.from_].append(bytes(tap.msg))
    for from_ in ("agent", "client"):
        want = wire_lines(b"".join(sent[from_]))
        assert len(got[from_]) == len(want), f"{len(want)} {from_} lines, {len(got[from_])} recorded"
        for line, msg in zip(want, got[from_], strict=True):
            if msg == line.strip(b" \t\r"):
                continue  # spliced byte for byte (a reader's Raw holds the value without the blanks around it)
            text = msgspec.json.decode(msg)
            assert isinstance(text, str)
            assert text == line.decode("utf-8", errors="replace")
    seq = 0
    for event in events:
        json.loads(normalize.encode(event), parse_constant=_no_constant)
        if isinstance(event, SessionEvent):
            seq += 1
            assert event.event.seq == seq, f"seq {event.event.seq} where {seq} was due"
