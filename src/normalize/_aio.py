"""The async shell: CoreEvents from files, pipes, sockets and byte streams (anyio).

A thin layer around the sans-I/O core, as httpcore is around h11: bytes come in
from an anyio stream, :class:`~normalize.CaptureParser` cuts them into records,
a :class:`~normalize.Session` turns records into CoreEvents.  Runs on asyncio and
trio.  Rules:

* pull, never push: nothing is read until the consumer asks for an event and
  every event of the last chunk was taken.  A slow consumer slows the reader;
  no event is dropped; memory is one chunk (:data:`CHUNK`) plus one line
  (``max_line``), plus the detection sample before the protocol is known (a
  session whose files are merged in time order: a batch of records, :data:`BATCH`,
  and one line per file);
* the same input gives the same events as the sync :func:`~normalize.events`;
* the end of input is explicit: the Session's ``close()`` runs, open turns are
  reported.  Stopping early (``aclose()``, leaving ``async with``, cancellation)
  closes the source and the Session too; the events nobody took are kept in
  :attr:`EventStream.closing`.
"""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Iterator
from types import TracebackType
from typing import Literal, Protocol, Union

import anyio
from anyio.abc import ByteReceiveStream
from anyio.streams.file import FileReadStream

from ._connection import Connection
from ._contract import Adapter, Sample
from ._convert import DETECT_SAMPLE, SessionInput, open_session
from ._errors import DetectionError, InputError
from ._lines import DEFAULT_MAX_LINE, CaptureParser, LineProblem, Message, Record
from ._model import Origin, _Core
from ._registry import adapter_class, detect_protocol
from ._session import Clock, Session

__all__ = ["CHUNK", "ByteSource", "EventStream", "aevents"]

#: Bytes asked of the source per read.  Small enough that one chunk's events
#: are few, large enough that a fast source is read in few calls.
CHUNK = 1 << 16

#: What :func:`aevents` reads: a file path, a session on disk (its main file
#: then its companions, see :func:`~normalize.find_inputs`), an anyio byte
#: stream (a pipe, a socket, a child's stdout), or an async iterable of chunks.
ByteSource = Union[str, "os.PathLike[str]", SessionInput, ByteReceiveStream, AsyncIterable[bytes]]

_Fmt = Literal["tap", "plain", "document"] | None


class Converter:
    """Records -> CoreEvents, detecting the protocol first when it is not given.  Sans-I/O.

    ``eager=False`` detects from the first :data:`~normalize.DETECT_SAMPLE`
    messages, exactly as the sync :func:`~normalize.events` does (a file: all of
    it is there).  ``eager=True`` decides as soon as the messages seen so far
    are recognised without ambiguity, so a live stream's events are not held
    back; it gives up, like the sync path, after the full sample.
    """

    def __init__(
        self,
        *,
        protocol: str | None = None,
        adapter: Adapter | None = None,
        session_id: str | None = None,
        origin: Origin | None = None,
        clock: Clock | None = None,
        strict: bool = False,
        eager: bool = False,
    ) -> None:
        self._opts = (session_id, origin, clock, strict)
        self._eager = eager
        self._head: list[Record] = []
        self._sample: list[Sample] = []
        self.session: Session | Connection | None = None
        self.protocol = protocol
        if adapter is None and protocol is not None:
            adapter = adapter_class(protocol)()
        if adapter is not None:
            self._start(adapter)

    def _start(self, adapter: Adapter) -> None:
        session_id, origin, clock, strict = self._opts
        self.protocol = type(adapter).protocol
        self.session = open_session(adapter, session_id=session_id, origin=origin, clock=clock, strict=strict)

    def _detect(self) -> list[_Core]:
        self._start(adapter_class(detect_protocol(self._sample))())
        head, self._head, self._sample = self._head, [], []
        return self._run(head)

    def _run(self, records: Iterable[Record]) -> list[_Core]:
        session = self.session
        assert session is not None
        out: list[_Core] = []
        for rec in records:
            if isinstance(rec, LineProblem):
                out += session.feed_problem(rec.error, t=rec.t)
            else:
                out += session.feed(rec.data, rec.from_, t=rec.t)
        return out

    def feed(self, records: Iterable[Record]) -> list[_Core]:
        if self.session is not None:
            return self._run(records)
        out: list[_Core] = []
        for rec in records:
            if self.session is not None:
                out += self._run([rec])
                continue
            self._head.append(rec)
            if not isinstance(rec, Message):
                continue
            self._sample.append((rec.data, rec.from_))
            if len(self._sample) >= DETECT_SAMPLE:
                out += self._detect()
            elif self._eager:
                try:
                    proto = detect_protocol(self._sample)
                except DetectionError:
                    continue
                self.protocol = proto
                out += self._detect()
        return out

    def close(self) -> list[_Core]:
        """The input ended: detect from what came if still needed, then close the Session."""
        if self.session is None:
            out = self._detect()  # raises DetectionError on an empty or unknown input
        else:
            out = []
        assert self.session is not None
        if not self.session.closed:
            out += self.session.close()
        return out

    def abort(self) -> list[_Core]:
        """Stop early: close the Session if there is one (never raises for detection)."""
        if self.session is None or self.session.closed:
            return []
        return self.session.close()


class Feeder(Protocol):
    """What an :class:`EventStream` drives: bytes in, CoreEvents out."""

    def feed(self, data: bytes) -> list[_Core]: ...
    def close(self) -> list[_Core]: ...
    def abort(self) -> list[_Core]: ...
    def problem(self, error: InputError) -> list[_Core]: ...
    @property
    def session(self) -> Session | Connection | None: ...


class CaptureFeeder:
    """A capture byte stream (tap or plain JSONL) -> CoreEvents.  Sans-I/O."""

    def __init__(self, converter: Converter, *, max_line: int = DEFAULT_MAX_LINE, fmt: _Fmt = None) -> None:
        self.converter = converter
        self._parser = CaptureParser(max_line, fmt)

    @property
    def session(self) -> Session | Connection | None:
        return self.converter.session

    def feed(self, data: bytes) -> list[_Core]:
        return self.converter.feed(self._parser.feed(data))

    def close(self) -> list[_Core]:
        return self.converter.feed(self._parser.close()) + self.converter.close()

    def abort(self) -> list[_Core]:
        return self.converter.abort()

    def problem(self, error: InputError) -> list[_Core]:
        return self.converter.feed([LineProblem(error)])


#: Reads the next chunk; ``b""`` at the end of the input.
Receive = Callable[[], Awaitable[bytes]]


async def _no_op(early: bool) -> None:
    return None


class EventStream:
    """An async iterator of CoreEvents over a byte source.

    Use it as ``async with aevents(src) as stream: async for ev in stream``; the
    block's end closes the source and the Session, whatever ended it.
    """

    #: ``close_source(early)`` ends the source: at its end (``early=False``) or
    #: when the consumer stopped first (``early=True``).

    def __init__(
        self,
        feeder: Feeder,
        receive: Receive,
        close_source: Callable[[bool], Awaitable[None]] = _no_op,
    ) -> None:
        self._feeder = feeder
        self._receive = receive
        self._close_source = close_source
        self._pending: deque[_Core] = deque()
        self._ended = False
        #: events that were not taken because the stream was closed early: the
        #: ones already produced, then those of the Session's ``close()``
        self.closing: list[_Core] = []

    @property
    def session(self) -> Session | Connection | None:
        """The Session (None until the protocol is known)."""
        return self._feeder.session

    @property
    def protocol(self) -> str | None:
        """The protocol read (None until it is known)."""
        session = self._feeder.session
        return None if session is None else type(session.adapter).protocol

    def __aiter__(self) -> AsyncIterator[_Core]:
        return self

    async def __anext__(self) -> _Core:
        while not self._pending:
            if self._ended:
                raise StopAsyncIteration
            await self._pull()
        return self._pending.popleft()

    async def _pull(self) -> None:
        try:
            chunk = await self._receive()
        except InputError as exc:  # the source broke (a followed file was truncated)
            self._pending.extend(self._feeder.problem(exc))
            chunk = b""
        if chunk:
            self._pending.extend(self._feeder.feed(chunk))
            return
        self._ended = True
        with anyio.CancelScope(shield=True):
            await self._close_source(False)
        self._pending.extend(self._feeder.close())

    async def aclose(self) -> None:
        """Stop reading: close the source and the Session.  Safe to call twice."""
        if self._ended:
            return
        self._ended = True
        with anyio.CancelScope(shield=True):
            await self._close_source(True)
        self.closing = [*self._pending, *self._feeder.abort()]
        self._pending.clear()

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def _receiver(source: ByteReceiveStream | AsyncIterable[bytes]) -> Receive:
    if isinstance(source, ByteReceiveStream):
        stream = source

        async def receive_stream() -> bytes:
            try:
                return await stream.receive(CHUNK)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return b""

        return receive_stream
    it = aiter(source)

    async def receive_iter() -> bytes:
        while True:
            try:
                chunk = await anext(it)
            except StopAsyncIteration:
                return b""
            if chunk:
                return chunk

    return receive_iter


async def _store_lines(inp: SessionInput) -> AsyncIterator[bytes]:
    def read() -> list[bytes]:
        return [rec.data + b"\n" for rec in inp.records() if isinstance(rec, Message)]

    for line in await anyio.to_thread.run_sync(read):
        yield line


def aevents(
    source: ByteSource,
    *,
    protocol: str | None = None,
    adapter: Adapter | None = None,
    session_id: str | None = None,
    origin: Origin | None = None,
    clock: Clock | None = None,
    strict: bool = False,
    max_line: int = DEFAULT_MAX_LINE,
    fmt: _Fmt = None,
    eager: bool | None = None,
) -> EventStream:
    """CoreEvents of one session read asynchronously: the async twin of :func:`~normalize.events`.

    ``source`` is a path (the file is opened on first read and closed at the
    end), an anyio byte stream or an async iterable of byte chunks (left open:
    the caller owns it).  Detection waits for the full sample on a file and
    decides eagerly on a stream (see :class:`Converter`); ``eager`` overrides.
    """
    if isinstance(source, SessionInput) and source.key is not None:
        # a session of a database: its row records, read in a worker thread, one a line
        protocol = protocol or source.protocol
        paths = []
        source = _store_lines(source)
    elif isinstance(source, SessionInput) and source.companions and adapter_class(source.protocol).interleave:
        # a session whose files are read merged in time order: records from a worker thread
        return _records_stream(
            Converter(
                protocol=protocol or source.protocol,
                adapter=adapter,
                session_id=session_id,
                origin=origin,
                clock=clock,
                strict=strict,
                eager=bool(eager),
            ),
            source.records(max_line=max_line),
        )
    elif isinstance(source, SessionInput):
        paths = [os.fspath(p) for p in source.paths]
        protocol = protocol or source.protocol
    elif isinstance(source, str | os.PathLike):
        paths = [os.fspath(source)]
    else:
        paths = []
    conv = Converter(
        protocol=protocol,
        adapter=adapter,
        session_id=session_id,
        origin=origin,
        clock=clock,
        strict=strict,
        eager=(not paths) if eager is None else eager,
    )
    if not paths:
        assert not isinstance(source, str | os.PathLike | SessionInput)
        return EventStream(CaptureFeeder(conv, max_line=max_line, fmt=fmt), _receiver(source))
    return _files_stream(_FilesFeeder(conv, max_line, fmt), paths)


#: Records handed over per worker-thread call when records are read in a thread.
BATCH = 512


class _RecordsFeeder:
    """Records read in a worker thread (a session's files merged in time order) -> CoreEvents.

    The stream's ``receive`` leaves each batch in :attr:`batch` and returns a marker
    chunk; :meth:`feed` converts the batch (the marker's bytes are no input).
    """

    def __init__(self, converter: Converter) -> None:
        self.converter = converter
        self.batch: list[Record] = []

    @property
    def session(self) -> Session | Connection | None:
        return self.converter.session

    def feed(self, data: bytes) -> list[_Core]:
        batch, self.batch = self.batch, []
        return self.converter.feed(batch)

    def close(self) -> list[_Core]:
        return self.converter.close()

    def abort(self) -> list[_Core]:
        return self.converter.abort()

    def problem(self, error: InputError) -> list[_Core]:
        return self.converter.feed([LineProblem(error)])


def _records_stream(converter: Converter, records: Iterator[Record]) -> EventStream:
    feeder = _RecordsFeeder(converter)

    def take() -> list[Record]:
        return list(itertools.islice(records, BATCH))

    async def receive() -> bytes:
        batch = await anyio.to_thread.run_sync(take)
        if not batch:
            return b""
        feeder.batch = batch
        return b"records"

    async def close(early: bool) -> None:
        close_records = getattr(records, "close", None)
        if close_records is not None:
            close_records()

    return EventStream(feeder, receive, close)


class _FilesFeeder(CaptureFeeder):
    """Several files read one after the other, each parsed on its own (like :func:`~normalize.read_records`)."""

    def __init__(self, converter: Converter, max_line: int, fmt: _Fmt) -> None:
        super().__init__(converter, max_line=max_line, fmt=fmt)
        self._max_line, self._fmt = max_line, fmt
        self._boundary = False

    def next_file(self) -> None:
        """The current file ended; its last line is settled before the next file's bytes."""
        self._boundary = True

    def _settle(self) -> list[_Core]:
        if not self._boundary:
            return []
        self._boundary = False
        out = self.converter.feed(self._parser.close())
        self._parser = CaptureParser(self._max_line, self._fmt)
        return out

    def feed(self, data: bytes) -> list[_Core]:
        return self._settle() + super().feed(data)

    def close(self) -> list[_Core]:
        return self._settle() + super().close()


def _files_stream(feeder: _FilesFeeder, paths: list[str]) -> EventStream:
    todo = list(paths)
    current: list[FileReadStream] = []

    async def receive() -> bytes:
        while True:
            if not current:
                if not todo:
                    return b""
                current.append(await FileReadStream.from_path(todo.pop(0)))
            chunk = await _receiver(current[0])()
            if chunk:
                return chunk
            await current.pop().aclose()
            if todo:
                feeder.next_file()

    async def close(early: bool) -> None:
        while current:
            await current.pop().aclose()

    return EventStream(feeder, receive, close)
