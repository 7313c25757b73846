"""Every golden event through both sides of the model: msgspec and the pydantic boundary agree,
and every golden stream passes ``normalize validate`` (schema and envelope rules)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import normalize
from helpers import GOLDEN
from normalize._schema import dump, line_adapter, validate_lines

GOLDENS = sorted(GOLDEN.rglob("*.jsonl"))


def _id(p: Path) -> str:
    return p.relative_to(GOLDEN).as_posix()


@pytest.mark.parametrize("golden", GOLDENS, ids=_id)
def test_msgspec_and_pydantic_read_and_write_every_golden_event_the_same(golden: Path) -> None:
    adapter = line_adapter()
    for line in golden.read_bytes().splitlines():
        want = json.loads(line)
        via_msgspec = normalize.encode(normalize.decode(line))
        via_pydantic = dump(adapter.validate_json(line))
        assert json.loads(via_msgspec) == want
        assert json.loads(via_pydantic) == want


@pytest.mark.parametrize("golden", GOLDENS, ids=_id)
def test_every_golden_stream_passes_validate(golden: Path) -> None:
    assert [str(p) for p in validate_lines(golden.read_bytes().splitlines())] == []


def test_there_are_goldens() -> None:
    assert len(GOLDENS) > 100


def _with_unknown_fields(line: bytes) -> bytes:
    """A line as a newer normalize might write it: unknown members in the event, envelope and body."""
    data = json.loads(line)
    data["addedLater"] = {"nested": [1, 2]}
    if isinstance(data.get("event"), dict):
        data["event"]["addedLater"] = "envelope or body member"
    if isinstance(data.get("record"), dict):
        data["record"]["addedLater"] = True
    return json.dumps(data).encode()


@pytest.mark.parametrize("golden", GOLDENS[::10], ids=_id)
def test_fields_newer_than_the_schema_never_fail_validate_or_decoding(golden: Path) -> None:
    lines = [_with_unknown_fields(line) for line in golden.read_bytes().splitlines()]
    assert [str(p) for p in validate_lines(lines)] == []
    adapter = line_adapter()
    for old, new in zip(golden.read_bytes().splitlines(), lines, strict=True):
        # both sides read the newer line; msgspec keeps what it knows, as from the older line
        assert json.loads(normalize.encode(normalize.decode(new))) == json.loads(old)
        adapter.validate_json(new)
