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
import stat

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


#: Bytes remembered from the start of the file and from just before the read position;
#: both are compared with the file before each read, to tell an append from a rewrite.
WITNESS = 4096


class _Followed:
    """One followed file: read as it grows, checked before and after each read.

    A regular file is polled.  Before each read its name must still lead to the same
    file (not removed, not replaced), the file must not be shorter than what was read,
    and its first bytes and the bytes just before the read position must be those read:
    a file rewritten in place (``cat other > file``: same inode, larger) fails that, and
    is never read as a continuation.  The bytes just read are checked again after the
    read, so a rewrite during the read is caught too.  A rewrite that keeps those bytes
    (up to :data:`WITNESS` at each place) is indistinguishable from an append.

    Anything else (a FIFO, a character device) is a stream: opened without blocking,
    read when it is readable, ended when its writers close it.  Either way the event
    loop never blocks, so a signal, cancellation or the idle timeout stop it at once.
    """

    def __init__(self, name: str, poll: float, idle_timeout: float | None) -> None:
        self.name = name
        self.poll = poll
        self.idle_timeout = idle_timeout
        self.fd = -1
        self.regular = True
        self.ino = self.dev = 0
        self.offset = 0
        self.head = b""
        self.tail = b""

    def open(self) -> None:
        # O_NONBLOCK: opening a FIFO would otherwise wait for a writer, out of the event loop's reach
        self.fd = os.open(self.name, os.O_RDONLY | os.O_NONBLOCK)
        st = os.fstat(self.fd)
        self.ino, self.dev, self.regular = st.st_ino, st.st_dev, stat.S_ISREG(st.st_mode)
        if self.regular:
            os.set_blocking(self.fd, True)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    async def receive(self) -> bytes:
        if self.fd < 0:
            self.open()
        idle_since = anyio.current_time()
        if not self.regular:
            return await self._receive_stream(idle_since)
        while True:
            data = self._read_file()
            if data:
                return data
            if self.idle_timeout is not None and anyio.current_time() - idle_since >= self.idle_timeout:
                return b""
            await anyio.sleep(self.poll)

    async def _receive_stream(self, idle_since: float) -> bytes:
        # Waited for before reading: a FIFO no writer opened yet reads as its end.
        while True:
            timeout = self.idle_timeout
            remaining = None if timeout is None else idle_since + timeout - anyio.current_time()
            with anyio.move_on_after(remaining):
                await anyio.wait_readable(self.fd)
            try:
                return os.read(self.fd, _CHUNK)  # b"": its writers closed it (or the idle timeout passed)
            except BlockingIOError:
                if timeout is not None and anyio.current_time() - idle_since >= timeout:
                    return b""

    def _read_file(self) -> bytes:
        self._check()
        data = os.pread(self.fd, _CHUNK, self.offset)
        if data:
            self._check()  # not rewritten while we read
            self.offset += len(data)
            if len(self.head) < WITNESS:
                self.head = (self.head + data)[:WITNESS]
            self.tail = (self.tail + data)[-WITNESS:]
        return data

    def _check(self) -> None:
        name = self.name
        try:
            st = os.stat(name)
        except FileNotFoundError:
            raise FileChanged(f"{name} was removed while it was followed") from None
        if (st.st_ino, st.st_dev) != (self.ino, self.dev):
            raise FileChanged(f"{name} was replaced by another file (rotated) while it was followed")
        if st.st_size < self.offset:
            raise FileChanged(f"{name} was truncated to {st.st_size} bytes after {self.offset} were read")
        if self.offset and (
            os.pread(self.fd, len(self.head), 0) != self.head
            or os.pread(self.fd, len(self.tail), self.offset - len(self.tail)) != self.tail
        ):
            raise FileChanged(f"{name} was rewritten in place after {self.offset} bytes were read")


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
    conv = Converter(protocol=protocol, session_id=session_id, origin=origin, clock=clock, strict=strict, eager=True)
    name = os.path.expanduser(os.fspath(path))  # "~/.claude/projects/..." as a user writes it
    followed = _Followed(name, poll, idle_timeout)

    async def close(early: bool) -> None:
        followed.close()

    return EventStream(CaptureFeeder(conv, max_line=max_line), followed.receive, close)
