"""What the drive tests share: the replay promise every backend keeps, and small readers of events."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import normalize


def assert_replays(driven: list[Any], recording: Path) -> None:
    """The driven events equal ``normalize.events()`` of the tap recording, byte for byte (ts included)."""
    converted = list(normalize.events(normalize.read_records([recording])))
    assert [normalize.encode(e) for e in driven] == [normalize.encode(e) for e in converted]


def bodies(events: Sequence[Any], kind: type) -> list[Any]:
    """The bodies of ``kind`` among the session events, in order."""
    return [e.event.body for e in events if isinstance(e, normalize.SessionEvent) and isinstance(e.event.body, kind)]


async def rest(s: normalize.DriveSession) -> AsyncIterator[Any]:
    """Close the session, then its remaining events, to its end."""
    await s.close()
    async for ev in s:
        yield ev
