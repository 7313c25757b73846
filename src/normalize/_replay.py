"""Replay: a recording or a stored session re-emitted as events, at the pace it was recorded.

Rules (docs/live.md, "Replay"):

* every event is ``origin: "replay"``, also those the adapter marks ``live``;
* pacing follows each ``session.event``'s ``ts``: a tap file's ``t``, or the
  native timestamp when the format has one.  The first paced event goes out at
  once; each later one when ``(ts - first ts) / speed`` seconds have passed.
  Events without a time of their own get the Session's clock, which in a
  replay is fixed at the moment the replay started, and are not waited for;
  a time going backwards is not waited for either.  ``speed=0`` never waits;
* ``from_seq=N`` resumes after seq N: the ``session.event`` with seq N and
  every CoreEvent before it are skipped; everything after it is kept, also the
  events without a seq that follow it (a state change, a ``session.update``):
  a consumer that stopped at N had not seen them.  The pace starts at the
  first event kept.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path

import anyio
from msgspec import structs

from ._aio import aevents
from ._convert import find_inputs
from ._errors import DetectionError, UsageError
from ._lines import DEFAULT_MAX_LINE
from ._model import SessionEvent, _Core
from ._session import Clock, format_ts

__all__ = ["Pacer", "replay"]


def _seconds(ts: str) -> float | None:
    try:
        return datetime.fromisoformat(ts).timestamp()
    except ValueError:
        return None


class Pacer:
    """When each event of a replay is due, in seconds after the first paced one.  Sans-I/O.

    ``due(event)`` returns None for an event that goes out at once.  ``untimed``
    is the ``ts`` the replay's clock gives events without a time of their own.
    """

    def __init__(self, speed: float = 1.0, *, untimed: str | None = None) -> None:
        if speed < 0:
            raise UsageError("speed must be 0 or more")
        self.speed = speed
        self.untimed = untimed
        self._first: float | None = None
        self._last: float | None = None

    def due(self, event: _Core) -> float | None:
        if self.speed == 0 or not isinstance(event, SessionEvent) or event.event.ts == self.untimed:
            return None
        t = _seconds(event.event.ts)
        if t is None:
            return None
        if self._first is None:
            self._first = self._last = t
            return 0.0
        assert self._last is not None
        if t <= self._last:
            return None
        self._last = t
        return (t - self._first) / self.speed


def _as_replay(event: _Core) -> _Core:
    if isinstance(event, SessionEvent) and event.event.origin != "replay":
        return structs.replace(event, event=structs.replace(event.event, origin="replay"))
    return event


async def replay(
    path: str | os.PathLike[str],
    *,
    protocol: str | None = None,
    speed: float = 1.0,
    from_seq: int = 0,
    strict: bool = False,
    max_line: int = DEFAULT_MAX_LINE,
    clock: Clock | None = None,
) -> AsyncIterator[_Core]:
    """The events of a recording (tap file) or stored session, re-emitted with their recorded pacing.

    A folder gives its first session (``normalize replay FOLDER`` replays each in turn).

    ``clock`` is read once, when the replay starts: its time is the ``ts`` of
    events that have no time of their own.
    """
    found = list(find_inputs([Path(path)], protocol=protocol, max_line=max_line))
    sessions = [i for i in found if not isinstance(i, DetectionError)]
    if not sessions:  # nothing to replay: why the first file was not a session, or that there was none
        errors = [i for i in found if isinstance(i, DetectionError)]
        raise errors[0] if errors else DetectionError(f"{path}: no session found")
    inp = sessions[0]
    started = (clock or time.time)()
    pacer = Pacer(speed, untimed=format_ts(started))
    start: float | None = None
    resumed = from_seq <= 0
    async with aevents(inp, origin="replay", clock=lambda: started, strict=strict, max_line=max_line) as stream:
        async for event in stream:
            if not resumed:
                if not (isinstance(event, SessionEvent) and event.event.seq >= from_seq):
                    continue
                resumed = True
                if event.event.seq == from_seq:
                    continue  # the consumer has it; what follows it is new to them
            due = pacer.due(event)
            if due is not None:
                now = anyio.current_time()
                if start is None:
                    start = now - due
                if start + due > now:
                    await anyio.sleep(start + due - now)
            yield _as_replay(event)
