"""The lines ``convert`` writes are the encoding of the events the Python API gives.

``convert`` writes through :class:`~normalize._convert.NormalizedLines`, a batch of
lines per batch of records (one write each); nothing is lost, reordered or changed
by the batching, whatever its size.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from helpers import capture_files, capture_id, companions, convert_records, fixed_clock, protocol_of, records_of
from normalize import _convert, encode
from normalize._convert import NormalizedLines
from normalize._model import Origin
from normalize._pipeline import encode_lines

CAPTURES = capture_files()


def _lines(capture: Path, batch: int, origin: Origin | None = None) -> list[bytes]:
    lines = NormalizedLines(
        records_of(companions(capture)), protocol=protocol_of(capture), clock=fixed_clock, batch=batch, origin=origin
    )
    return [line for chunk in lines for line in chunk]


@pytest.mark.parametrize("capture", CAPTURES, ids=capture_id)
def test_lines_are_the_encoded_events(capture: Path) -> None:
    want = [encode(ev) for ev in convert_records(records_of(companions(capture)), protocol_of(capture))]
    assert _lines(capture, batch=7) == want


@pytest.mark.parametrize("origin", ["live", "replay"])
@pytest.mark.parametrize("capture", CAPTURES[::7], ids=capture_id)
def test_lines_with_an_origin_forced(capture: Path, origin: Origin) -> None:
    events = convert_records(records_of(companions(capture)), protocol_of(capture), origin=origin)
    assert _lines(capture, batch=1000, origin=origin) == [encode(ev) for ev in events]


def test_recognised_says_whether_anything_was_translated() -> None:
    capture = next(c for c in CAPTURES if protocol_of(c) == "codex-exec-json")
    lines = NormalizedLines(records_of([capture]), protocol="codex-exec-json", clock=fixed_clock)
    assert not lines.recognised
    list(lines)
    assert lines.recognised
    other = NormalizedLines(records_of([capture]), protocol="hm-json", clock=fixed_clock)
    list(other)
    assert not other.recognised


@pytest.mark.parametrize("capture", CAPTURES, ids=capture_id)
def test_chunks_are_the_encoded_events_one_a_line(capture: Path) -> None:
    want = b"".join(encode(ev) + b"\n" for ev in convert_records(records_of(companions(capture)), protocol_of(capture)))
    lines = NormalizedLines(records_of(companions(capture)), protocol=protocol_of(capture), clock=fixed_clock, batch=5)
    assert b"".join(bytes(chunk) for chunk in lines.chunks()) == want


def test_a_chunk_is_released_once_the_next_is_asked_for() -> None:
    """A chunk of one session's lines is a view of the buffer the next batch is written
    into: kept past the next one, it raises rather than show the next batch's bytes."""
    capture = next(c for c in CAPTURES if protocol_of(c) == "claude-stream-json")
    lines = NormalizedLines(records_of([capture]), protocol="claude-stream-json", clock=fixed_clock, batch=1)
    chunks = iter(lines.chunks())
    first = next(chunks)
    copy = bytes(first)
    assert copy.startswith(b'{"type":"session.created"') and copy.endswith(b"\n")
    next(chunks)
    with pytest.raises(ValueError, match="released"):
        bytes(first)


def test_a_batch_larger_than_the_buffer_keeps_room_for_is_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """The buffer keeps room for batches of ``_BALLAST`` bytes; a larger batch (lines far
    longer than usual) is written whole, and so are the batches after it."""
    capture = next(c for c in CAPTURES if protocol_of(c) == "claude-stream-json")
    want = b"".join(encode(ev) + b"\n" for ev in convert_records(records_of([capture]), "claude-stream-json"))
    monkeypatch.setattr(_convert, "_BALLAST", 64)  # most batches are larger than this
    lines = NormalizedLines(records_of([capture]), protocol="claude-stream-json", clock=fixed_clock, batch=2)
    chunks = [bytes(chunk) for chunk in lines.chunks()]
    assert max(map(len, chunks)) > 2 * 64
    assert b"".join(chunks) == want


def test_one_buffer_of_lines_from_several_sessions_is_each_line_encoded() -> None:
    """``encode_lines`` (one buffer for a batch) writes the bytes :func:`encode` gives each
    event, whatever sessions the events belong to, interleaved."""
    streams = [
        convert_records(records_of(companions(c)), protocol_of(c))
        for c in (CAPTURES[0], CAPTURES[len(CAPTURES) // 2], CAPTURES[-1])
    ]
    mixed = [ev for group in itertools.zip_longest(*streams) for ev in group if ev is not None]
    assert len({ev.session_id for ev in mixed}) >= 3
    assert bytes(encode_lines(mixed)) == b"".join(encode(ev) + b"\n" for ev in mixed)
    # appended to a buffer given, after what it holds
    assert bytes(encode_lines(mixed[:5], bytearray(b"x\n"))) == b"x\n" + b"".join(
        encode(ev) + b"\n" for ev in mixed[:5]
    )


def test_a_batch_of_many_events_comes_in_chunks_of_at_most_chunk_events(monkeypatch: pytest.MonkeyPatch) -> None:
    """However many events a batch gives (a connection's close settles every session it
    opened), a chunk holds the lines of at most ``CHUNK_EVENTS`` of them, in order."""
    capture = next(c for c in CAPTURES if protocol_of(c) == "acp")
    want = [encode(ev) + b"\n" for ev in convert_records(records_of(companions(capture)), "acp")]
    monkeypatch.setattr(_convert, "CHUNK_EVENTS", 3)
    lines = NormalizedLines(records_of(companions(capture)), protocol="acp", clock=fixed_clock, batch=1000)
    chunks = [bytes(chunk) for chunk in lines.chunks()]
    assert len(want) > 3 * 2
    assert [chunk.count(b"\n") for chunk in chunks] == [3] * (len(want) // 3) + (
        [len(want) % 3] if len(want) % 3 else []
    )
    assert b"".join(chunks) == b"".join(want)


def test_a_connection_s_chunk_is_released_once_the_next_is_asked_for() -> None:
    """A connection (several sessions on one input) writes its batches into the same
    reused buffer as a session."""
    capture = next(c for c in CAPTURES if protocol_of(c) == "codex-app-server")
    lines = NormalizedLines(records_of(companions(capture)), protocol="codex-app-server", clock=fixed_clock, batch=1)
    chunks = iter(lines.chunks())
    first = next(chunks)
    assert bytes(first).endswith(b"\n")
    next(chunks)
    with pytest.raises(ValueError, match="released"):
        bytes(first)


def test_the_writer_s_envelope_has_the_wire_envelope_s_fields_in_its_order() -> None:
    """``encode_lines`` makes the envelope by position from the fields of an
    EventEnvelope: the writer's struct and the documented wire envelope (the JSON
    schema's) name the same fields in the same order, and an EventEnvelope's fields are
    in the order the writer reads them."""
    import msgspec

    from normalize._codec import _EnvelopeOut, _EnvelopeWire
    from normalize._model import EventEnvelope

    def named(cls: type) -> list[tuple[str, str]]:
        return [(f.name, f.encode_name) for f in msgspec.structs.fields(cls)]

    assert named(_EnvelopeOut) == named(_EnvelopeWire)
    assert EventEnvelope.__struct_fields__ == (
        "session_id", "agent", "seq", "ts", "origin", "native", "body", "turn_id", "subagent_id"
    )  # fmt: skip
