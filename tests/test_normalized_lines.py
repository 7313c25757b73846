"""The lines ``convert`` writes are the encoding of the events the Python API gives.

``convert`` writes through :class:`~normalize._convert.NormalizedLines`, a batch of
lines per batch of records (one write each); nothing is lost, reordered or changed
by the batching, whatever its size.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import capture_files, capture_id, companions, convert_records, fixed_clock, protocol_of, records_of
from normalize import encode
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
