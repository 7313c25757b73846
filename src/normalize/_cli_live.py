"""The live commands of the command line: ``tap``, ``replay``, ``convert --follow``.

Kept apart from ``_cli`` so that the batch commands start without anyio.
"""

from __future__ import annotations

import argparse
import functools
import os
import shlex
import signal
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, BinaryIO

import anyio
from anyio.abc import TaskStatus

from ._cli import _redactor
from ._codec import encode, encode_header
from ._convert import SessionInput, find_inputs, is_document, is_store
from ._errors import DetectionError, InputError, NotASession, UsageError
from ._model import _Core
from ._outputs import same_file
from ._registry import adapter_class
from ._term import json_for_terminal, printable
from ._version import __version__

if TYPE_CHECKING:
    from ._redact import Redactor

__all__ = ["cmd_replay", "cmd_tap", "follow_cmd"]


def _write_all(out: BinaryIO, data: bytes) -> None:
    """Write every byte, straight to the file descriptor.

    A buffered write of a large line to a full pipe, interrupted by a signal the event
    loop handles (Ctrl-C while following), can lose the part not yet written; a loop
    over os.write resumes after each partial write instead.
    """
    out.flush()
    try:
        fd = out.fileno()
    except (OSError, ValueError):  # not a real file (a test's BytesIO)
        out.write(data)
        out.flush()
        return
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class _EventWriter:
    """Writes a normalized stream to a binary file: the header before the first event, a flush per batch.

    ``send`` writes the bytes (default: straight to ``out``).  Once the reader closed
    ``out`` (a broken pipe: ``| head``), :attr:`broken` is set and nothing more is written.
    """

    def __init__(
        self,
        out: BinaryIO,
        *,
        input: str,
        protocol: Callable[[], str | None],
        redactor: Redactor | None = None,
        send: Callable[[bytes], None] | None = None,
    ) -> None:
        self.out = out
        self.redactor = redactor
        self._input = input
        self._protocol = protocol
        self._header = False
        try:
            self._tty = out.isatty()
        except ValueError:  # closed
            self._tty = False
        self._send = send if send is not None else (lambda data: _write_all(out, data))
        self.broken = False

    def write(self, events: Sequence[_Core]) -> None:
        if not events or self.broken:
            return
        lines = [encode(ev) for ev in events]
        if self.redactor is not None:  # deltas may be held back to find a secret cut across them
            lines = [held for line in lines for held in self.redactor.feed(line)]
        self._write(lines)

    def finish(self) -> None:
        """Write what the redactor still holds back (at the end of the stream)."""
        if self.redactor is not None:
            self._write(self.redactor.flush())

    def _write(self, lines: list[bytes]) -> None:
        if not lines:
            return
        if not self._header:
            self._header = True
            head = encode_header(library_version=__version__, input=self._input, protocol=self._protocol())
            lines.insert(0, head)
        if self.broken:
            return
        data = b"".join(line + b"\n" for line in lines)
        if self._tty:  # a person reads it: no raw C1 or bidi control from the input (JSON escapes the rest)
            data = json_for_terminal(data)
        try:
            self._send(data)
        except BrokenPipeError:
            self.broken = True  # the reader is gone (| head): stop quietly


#: Bytes of events kept in memory for a reader that is behind; more wait in a temporary file.
SPOOL_MEMORY = 8 * 1024 * 1024
_SPOOL_READ = 1 << 20


class _Spool:
    """Bytes written to ``out`` by a thread of its own, so that whoever writes never waits for the reader.

    ``tap --events -`` writes to stderr, which a caller may read only after stdout ended: a
    blocking write there would stop the relay, and the caller would wait forever.  What the
    reader has not taken yet waits here, in order: in memory up to :data:`SPOOL_MEMORY`, then
    in an unnamed temporary file, so memory stays bounded however far behind the reader is.
    ``close()`` waits until everything was written (or writing failed: :attr:`error`).
    """

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._cond = threading.Condition()
        self._memory: deque[bytes] = deque()
        self._memory_size = 0
        self._disk: IO[bytes] | None = None
        self._disk_read = 0
        self._disk_written = 0
        self._closing = False
        #: why writing stopped (the reader closed its end, a full disk), or None
        self.error: OSError | None = None
        self._thread = threading.Thread(target=self._run, daemon=True, name="normalize-events")
        self._thread.start()

    def write(self, data: bytes) -> None:
        with self._cond:
            if self.error is not None:
                return  # reported by close()
            if self._disk is None and self._memory_size + len(data) <= SPOOL_MEMORY:
                self._memory.append(data)
                self._memory_size += len(data)
            else:  # behind the memory, in order
                if self._disk is None:
                    self._disk = tempfile.TemporaryFile()  # noqa: SIM115 - closed once drained
                os.pwrite(self._disk.fileno(), data, self._disk_written)
                self._disk_written += len(data)
            self._cond.notify()

    def _next(self) -> bytes | None:
        """The next bytes to write, in order; None when closed and empty.  Under the lock."""
        while not self._memory and self._disk is None:
            if self._closing:
                return None
            self._cond.wait()
        if self._memory:
            data = b"".join(self._memory)
            self._memory.clear()
            self._memory_size = 0
            return data
        assert self._disk is not None
        data = os.pread(self._disk.fileno(), _SPOOL_READ, self._disk_read)
        self._disk_read += len(data)
        if self._disk_read >= self._disk_written:  # drained: back to memory
            self._disk.close()
            self._disk, self._disk_read, self._disk_written = None, 0, 0
        return data

    def _run(self) -> None:
        while True:
            with self._cond:
                data = self._next()
            if data is None:
                return
            try:
                _write_all(self._out, data)
            except OSError as exc:
                with self._cond:
                    self.error = exc
                    self._memory.clear()
                    if self._disk is not None:
                        self._disk.close()
                        self._disk = None
                return

    def close(self) -> OSError | None:
        with self._cond:
            self._closing = True
            self._cond.notify()
        self._thread.join()
        return self.error


async def _until_signal(scope: anyio.CancelScope, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
        task_status.started()
        async for _ in received:
            scope.cancel()
            return


def follow_cmd(args: argparse.Namespace) -> int:
    from ._follow import follow

    if len(args.inputs) != 1 or (args.output is not None and Path(args.output).is_dir()):
        raise UsageError("--follow reads exactly one file and writes one stream")
    followed = Path(args.inputs[0])
    if args.inputs[0] == "-" or followed.is_dir():
        raise UsageError(f"--follow reads one session file; {args.inputs[0]} is not a file")
    if not followed.exists():
        raise UsageError(f"{followed}: no such file")
    if args.protocol is not None:
        adapter_class(args.protocol)
    if args.output is not None and same_file(Path(args.output), followed):
        raise UsageError(f"will not write over an input: {args.output} is the followed file")
    if is_store(followed):
        raise UsageError("--follow reads a file an agent appends lines to, not a session database")
    if is_document(followed):  # rewritten whole on each change: new bytes are not new messages
        raise UsageError(
            f"--follow reads a file an agent appends lines to; {followed} is one JSON document, "
            "rewritten whole on each change: convert it without --follow"
        )
    out = sys.stdout.buffer if args.output is None else Path(args.output).open("wb")  # noqa: SIM115
    stream = follow(
        args.inputs[0],
        protocol=args.protocol,
        poll=args.poll,
        idle_timeout=args.idle_timeout,
        strict=args.strict,
        origin=args.origin,
        max_line=args.max_line,
    )
    writer = _EventWriter(out, input=args.inputs[0], protocol=lambda: stream.protocol, redactor=_redactor(args))

    async def run() -> None:
        async with anyio.create_task_group() as tg:
            await tg.start(_until_signal, tg.cancel_scope)
            async with stream:
                async for ev in stream:
                    writer.write([ev])
                    if writer.broken:
                        break  # nobody reads any more (| head): stop following
            tg.cancel_scope.cancel()
        writer.write(stream.closing)
        writer.finish()

    try:
        anyio.run(run)
    finally:
        if out is not sys.stdout.buffer:
            out.close()
    return 0


def _events_target(name: str | None) -> BinaryIO | None:
    if name is None:
        return None
    if name == "-":
        return sys.stderr.buffer
    return open(name, "wb")


def cmd_tap(args: argparse.Namespace) -> int:
    from ._tap import FdReader, FdWriter, Wiretap, _open_record, exit_status, relay

    command = args.agent[1:] if args.agent[:1] == ["--"] else args.agent
    if not command:
        raise UsageError("no agent command: normalize tap [options] -- AGENT_COMMAND...")
    if args.protocol is not None:
        adapter_class(args.protocol)  # an unknown name is a usage error before the agent starts
    record, owned = _open_record(args.record)
    events_out = _events_target(args.events)
    wiretap = Wiretap(protocol=args.protocol, max_line=args.max_line, record=record)
    # events are written by a thread of their own: a reader of --events that is behind
    # (stderr read only after stdout ended) never stops the relay
    spool = _Spool(events_out) if events_out is not None else None
    writer = (
        _EventWriter(
            events_out,
            input=shlex.join(command),
            protocol=lambda: wiretap.converter.protocol,
            redactor=_redactor(args),
            send=spool.write,
        )
        if events_out is not None and spool is not None
        else None
    )
    told: list[Exception] = []

    def on_error(exc: Exception) -> None:
        told.append(exc)
        if isinstance(exc, DetectionError):
            if writer is not None:  # without --events nobody asked for events
                print(f"normalize tap: {printable(exc.message)}; relaying without events", file=sys.stderr, flush=True)
            return
        what = printable(exc.message if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}")
        print(f"normalize tap: normalizing stopped ({what}); relaying without events", file=sys.stderr, flush=True)

    async def run() -> int:
        return await relay(
            command,
            stdin=FdReader(sys.stdin.fileno()),
            stdout=FdWriter(sys.stdout.fileno()),
            wiretap=wiretap,
            on_events=writer.write if writer is not None else _discard,
            on_error=on_error,
            forward_signals=True,
        )

    try:
        rc = anyio.run(run)
        if writer is not None:
            writer.finish()
    except FileNotFoundError as exc:
        print(f"normalize tap: {printable(command[0])}: {exc.strerror}", file=sys.stderr)
        return 127
    finally:
        _close_stdout()  # a caller reading stdout to its end, then stderr, goes on now
        failed = spool.close() if spool is not None else None
        if owned is not None:
            owned.close()
        if events_out is not None and events_out is not sys.stderr.buffer:
            events_out.close()
        if failed is not None:
            print(f"normalize tap: writing events to {args.events} stopped: {failed.strerror}", file=sys.stderr)
    return exit_status(rc)


def _close_stdout() -> None:
    """Give up our stdout (``/dev/null`` takes its place): its reader sees the end now."""
    try:
        sys.stdout.flush()
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _discard(events: Sequence[_Core]) -> None:
    return None


def cmd_replay(args: argparse.Namespace) -> int:
    """Replay every session found in the input (a file, or each session of a folder, one stream after another)."""
    from ._replay import replay

    if args.protocol is not None:
        adapter_class(args.protocol)  # an unknown name is a usage error, not a failure inside the event loop
    status = 0
    sessions: list[SessionInput] = []
    for inp in find_inputs([Path(args.input)], protocol=args.protocol, max_line=args.max_line):
        if isinstance(inp, NotASession):
            print(f"normalize: left as is: {inp.message}", file=sys.stderr)
        elif isinstance(inp, DetectionError):
            print(f"normalize: skipped: {inp.message}", file=sys.stderr)
            status = 1
        else:
            sessions.append(inp)
    if not sessions:
        print("normalize: no session found in the input", file=sys.stderr)
        return 1
    if args.output is not None and any(same_file(args.output, p) for inp in sessions for p in inp.paths):
        raise UsageError(f"will not write over an input: {args.output} is one of the inputs")
    out = sys.stdout.buffer if args.output is None else args.output.open("wb")

    async def run() -> None:
        async with anyio.create_task_group() as tg:
            await tg.start(_until_signal, tg.cancel_scope)
            for inp in sessions:
                writer = _EventWriter(
                    out, input=str(inp.main), protocol=functools.partial(str, inp.protocol), redactor=_redactor(args)
                )
                events = replay(
                    inp.main,
                    protocol=inp.protocol,
                    speed=args.speed,
                    from_seq=args.from_seq,
                    strict=args.strict,
                    max_line=args.max_line,
                )
                async for ev in events:
                    writer.write([ev])
                    if writer.broken:
                        break  # nobody reads any more (| head)
                if writer.broken:
                    break
            tg.cancel_scope.cancel()
        writer.finish()

    try:
        anyio.run(run)
    finally:
        if out is not sys.stdout.buffer:
            out.close()
    if len(sessions) > 1:
        print(f"normalize: replayed {len(sessions)} sessions", file=sys.stderr)
    return status
