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
