"""Native epoch times as normalize writes times: RFC 3339, UTC, milliseconds.

One rule for every adapter whose agent writes numbers (Codex app-server's
``emittedAtMs``, OpenCode's ``timestamp``): exact integer arithmetic (no float
rounding), the text of a whole second memoized (consecutive messages share it),
and ``None`` for a time no calendar date holds (past year 9999, before year 1):
the event then takes the capture's time, and its native payload keeps the number
as sent.  A bad number never stops the stream.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import Final

__all__ = ["ms_time", "s_time"]


@functools.lru_cache(maxsize=256)
def _second(seconds: int) -> str | None:
    """The text of one whole second, up to its fraction (``2026-11-06T09:12:04.``)."""
    try:
        return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.")
    except (OverflowError, ValueError, OSError):
        return None


#: each millisecond's text, and the zone after it (``"042Z"``)
_MILLIS: Final = tuple(f"{ms:03d}Z" for ms in range(1000))


class _Last:
    """The last second asked for and its text: consecutive messages share their second (a
    test of one number instead of a call of the memo of 256).  One pair, replaced whole:
    sessions read in several threads never see a second with another second's text."""

    __slots__ = ("pair",)

    def __init__(self) -> None:
        # no second anyone asks for: _second(-2**62) has no date
        self.pair: tuple[int, str | None] = (-(1 << 62), None)


_LAST: Final = _Last()


def ms_time(ms: int) -> str | None:
    """Unix milliseconds as a time, or None when no date holds it."""
    seconds = ms // 1000
    pair = _LAST.pair
    if seconds == pair[0]:
        second = pair[1]
    else:
        second = _second(seconds)
        _LAST.pair = (seconds, second)
    # (``ms % 1000``, not ``ms - seconds * 1000``: compiled, a product past 2**31 is made
    # as a Python int, about 800 instructions)
    return None if second is None else second + _MILLIS[ms % 1000]


def s_time(seconds: int) -> str | None:
    """Unix seconds as a time, or None when no date holds it."""
    second = _second(seconds)
    return None if second is None else second + "000Z"
