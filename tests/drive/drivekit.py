"""What the drive tests share: the replay promise every backend keeps, and small readers of events."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import normalize

#: Where scripts/install-agents puts the agent CLIs by default.
DEFAULT_BIN = Path("/tmp/normalize-drive-npm/node_modules/.bin")


def agent_binary(name: str) -> Path | None:
    """An agent's program: in ``$NORMALIZE_AGENTS_BIN``, else :data:`DEFAULT_BIN`, else on ``PATH``."""
    folders = [Path(os.environ["NORMALIZE_AGENTS_BIN"])] if os.environ.get("NORMALIZE_AGENTS_BIN") else []
    for folder in [*folders, DEFAULT_BIN]:
        path = folder / name
        if path.is_file() and os.access(path, os.X_OK):
            return path
    found = shutil.which(name)
    return Path(found) if found else None


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
