"""Following a session file an agent is still writing (a Claude transcript, a Codex rollout).

New lines become events as they are appended; the file is polled every
``poll`` seconds (appends need no notification API and work on every system).
Rules (docs/live.md, "Following a file"):

* a line is read once it ends with a newline; a last line still being written
  waits for the rest;
* the file is watched by identity: if it shrinks below what was read
  (truncated), is replaced (another inode: rotated, or written anew) or
  disappears, that is reported as an ``error`` event (``errorType``
  ``"file-changed"``) and following stops; its new content is never read as
  the continuation of the old;
* following stops when ``idle_timeout`` seconds pass without a new byte, or when
  the consumer stops (``aclose()``, cancellation, a signal in the CLI); the
  Session is closed either way, so a turn still open is reported as cut off.
"""

from __future__ import annotations

import os

import anyio

from ._aio import CaptureFeeder, Converter, EventStream
from ._errors import InputError
from ._lines import DEFAULT_MAX_LINE
from ._model import Origin
from ._session import Clock

__all__ = ["FileChanged", "follow"]

#: Seconds between two looks at a file that has no new bytes.
POLL = 0.1
_CHUNK = 1 << 16


class FileChanged(InputError):
    """A followed file was truncated, replaced or removed."""

    error_type = "file-changed"


def follow(
    path: str | os.PathLike[str],
    *,
    protocol: str | None = None,
    poll: float = POLL,
    idle_timeout: float | None = None,
    session_id: str | None = None,
    origin: Origin | None = None,
    clock: Clock | None = None,
    strict: bool = False,
    max_line: int = DEFAULT_MAX_LINE,
) -> EventStream:
    """Events of a session file, as the agent appends to it.  Use with ``async with``."""
    name = os.path.expanduser(os.fspath(path))  # "~/.claude/projects/..." as a user writes it
    conv = Converter(protocol=protocol, session_id=session_id, origin=origin, clock=clock, strict=strict, eager=True)
    state: dict[str, int] = {}
    files: list[int] = []

    async def receive() -> bytes:
        if not files:
            fd = os.open(name, os.O_RDONLY)
            st = os.fstat(fd)
            files.append(fd)
            state.update(ino=st.st_ino, dev=st.st_dev, offset=0)
        fd = files[0]
        idle_since = anyio.current_time()
        while True:
            data = os.read(fd, _CHUNK)  # a regular file: never blocks for long
            if data:
                state["offset"] += len(data)
                return data
            try:
                st = os.stat(name)
            except FileNotFoundError:
                raise FileChanged(f"{name} was removed while it was followed") from None
            if (st.st_ino, st.st_dev) != (state["ino"], state["dev"]):
                raise FileChanged(f"{name} was replaced by another file (rotated) while it was followed")
            if st.st_size < state["offset"]:
                raise FileChanged(f"{name} was truncated to {st.st_size} bytes after {state['offset']} were read")
            if idle_timeout is not None and anyio.current_time() - idle_since >= idle_timeout:
                return b""
            await anyio.sleep(poll)

    async def close(early: bool) -> None:
        while files:
            os.close(files.pop())

    return EventStream(CaptureFeeder(conv, max_line=max_line), receive, close)
