"""What the live I/O tests share: the fake agent's command, the wire lines of a capture, a tiny adapter."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from msgspec import structs

from normalize import Adapter, Direction, Item, Passthrough, SessionEvent, TurnComplete, TurnStart
from normalize._model import _Core

from .fake_agent import wire_lines

__all__ = ["FAKE_AGENT", "NORMALIZE", "TurnAdapter", "agent_command", "wire_lines", "without_ts"]

FAKE_AGENT = Path(__file__).with_name("fake_agent.py")
NORMALIZE = [sys.executable, "-m", "normalize"]


def agent_command(capture: Path, *args: str) -> list[str]:
    # -S: the fake agent needs only the standard library, and starts faster without site
    return [sys.executable, "-S", str(FAKE_AGENT), str(capture), *args]


def without_ts(events: Iterable[_Core]) -> list[_Core]:
    """The events with every ``ts`` blanked: for comparing a live run with a capture's recorded times."""
    return [
        structs.replace(e, event=structs.replace(e.event, ts="")) if isinstance(e, SessionEvent) else e for e in events
    ]


def without_made_up_ts(events: Iterable[_Core]) -> list[_Core]:
    """The events with the ``ts`` of made-up events (``native.protocol: "core"``) blanked.

    A made-up event takes the line's receive time when the line has one (a tap) and the
    nearest native time when it has none (a stored file converted): the two differ only there.
    """
    return [
        structs.replace(e, event=structs.replace(e.event, ts=""))
        if isinstance(e, SessionEvent) and e.event.native.protocol == "core"
        else e
        for e in events
    ]


class TurnAdapter(Adapter):
    """``{"turn":"start"}`` opens a turn, ``{"turn":"end"}`` ends it; anything else is kept as is."""

    protocol = "test-turns"
    agent = "test-agent"

    _table: dict[bytes, list[Item]] = {  # noqa: RUF012 - read only
        b'{"turn":"start"}': [TurnStart()],
        b'{"turn":"end"}': [TurnComplete(reason="ok")],
    }

    def feed(self, message: bytes, from_: Direction = "agent") -> list[Item]:
        self._check_open()
        return list(self._table.get(message, [Passthrough()]))

    def close(self) -> list[Item]:
        self._closed = True
        return []
