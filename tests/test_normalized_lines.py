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
from normalize import encode
from normalize._codec import encode_lines
from normalize._convert import NormalizedLines
from normalize._model import Origin

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
    assert b"".join(lines.chunks()) == want


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
