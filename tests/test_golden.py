"""Golden snapshots: every capture's exact normalized output, reviewed like code.

Update with ``pytest tests/test_golden.py --snapshot-update`` and read the diff.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from helpers import (
    GOLDEN,
    capture_files,
    capture_id,
    convert_capture,
    golden_path,
    golden_text,
    to_jsonl,
)

CAPTURES = capture_files()


@pytest.mark.parametrize("capture", CAPTURES, ids=capture_id)
def test_golden(capture: Path, golden: Any) -> None:
    assert golden_text(capture) == golden(golden_path(capture))


def test_every_capture_has_a_snapshot_and_every_snapshot_a_capture() -> None:
    expected = {golden_path(c) for c in CAPTURES}
    present = set(GOLDEN.rglob("*.jsonl"))
    assert sorted(expected - present) == [], "captures without a snapshot (run --snapshot-update)"
    assert sorted(present - expected) == [], "snapshots whose capture is gone"


@pytest.mark.parametrize("capture", CAPTURES, ids=capture_id)
@pytest.mark.parametrize("seed", [1, 2])
def test_any_chunking_gives_the_same_events(capture: Path, seed: int) -> None:
    whole = to_jsonl(convert_capture(capture))
    split = to_jsonl(convert_capture(capture, cuts_per_file=40, seed=seed))
    byte_by_byte_head = to_jsonl(convert_capture(capture, cuts_per_file=400, seed=seed + 10))
    assert split == whole
    assert byte_by_byte_head == whole
