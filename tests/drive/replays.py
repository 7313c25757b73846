"""The promise every backend keeps: a driven session's events are those of converting its recording."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import normalize


def assert_replays(driven: list[Any], recording: Path) -> None:
    """The driven events equal ``normalize.events()`` of the tap recording, byte for byte (ts included)."""
    converted = list(normalize.events(normalize.read_records([recording])))
    assert [normalize.encode(e) for e in driven] == [normalize.encode(e) for e in converted]
