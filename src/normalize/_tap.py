"""Live agents: a child process whose stdio is relayed, recorded and normalized on the side.

:class:`Wiretap` is the sans-I/O part: the bytes each side wrote, in the order
the relay saw them, become tap lines (the recording) and CoreEvents.  The I/O
around it is small: :func:`tap` runs an agent for a Python app (the app sends,
the agent's output becomes events), :func:`relay` puts ``normalize tap``
between a caller and an agent without either noticing.

Rules of the recording (the tap format, docs/live.md):

* one line per wire line, ``{"t":"<RFC 3339 ms Z>","from":"agent"|"client","msg":<line>}``,
  in the order the relay read them; ``t`` is the receive time and never decreases;
* ``msg`` is the wire line spliced in byte for byte when it is one JSON value;
  a line that is not JSON cannot be spliced and is recorded as a JSON string
  (lossless for UTF-8 text; invalid UTF-8 becomes U+FFFD);
* a line longer than ``max_line`` is relayed whole but recorded as a JSON string
  of its first :data:`~normalize._lines.KEEP_BYTES` bytes (memory stays bounded);
* blank lines carry no message and are not recorded; a ``\\r`` before the
  newline is dropped, as everywhere in normalize.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, BinaryIO

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import msgspec
from anyio.abc import ByteReceiveStream, ByteSendStream, Process
from msgspec import structs

from ._aio import CHUNK, Converter, EventStream
from ._connection import Connection
from ._contract import Adapter, Direction
from ._errors import DetectionError, InputError, TruncatedLine
from ._lines import DEFAULT_MAX_LINE, LineProblem, LineSplitter, Message, Record
from ._model import ErrorInfo, Origin, SessionFailed, SessionStateChanged, _Core
from ._session import Clock, Session, format_ts

__all__ = ["AgentTap", "Wiretap", "exit_status", "relay", "tap", "tap_line"]

_raw = msgspec.json.Decoder(msgspec.Raw)
_encoder = msgspec.json.Encoder()

#: Seconds a stopped agent is given to exit after SIGTERM before it is killed.
GRACE = 2.0


def _is_json(line: bytes) -> bool:
    """Whether a line can be spliced into a tap record as it is.

    A line nested deeper than the decoder's recursion allows is valid JSON, but
    reading the recording back would hit the same bound: it is recorded as a string.
    """
    try:
        _raw.decode(line)
    except (msgspec.DecodeError, RecursionError):
        return False
    return True


def tap_line(from_: Direction, line: bytes, t: str, *, spliced: bool | None = None) -> bytes:
    """One tap record (without newline): the wire line spliced in, or as a JSON string if it is not JSON."""
    if spliced is None:
        spliced = _is_json(line)
    msg = line if spliced else _encoder.encode(line.decode("utf-8", errors="replace"))
    return b'{"t":"' + t.encode() + b'","from":"' + from_.encode() + b'","msg":' + msg + b"}"


def exit_status(returncode: int) -> int:
    """A child's return code as a shell reports it: ``128 + N`` for death by signal N."""
    return 128 - returncode if returncode < 0 else returncode


class Wiretap:
    """Both directions of a live conversation -> tap lines and CoreEvents.  Sans-I/O.

    ``feed(data, from_)`` takes bytes as they crossed, in any chunking;
    ``close()`` says both sides are done.  ``record``, when given, receives each
    tap line (with its newline) as soon as its wire line is complete; ``tee``, each
    complete wire line itself with its direction (a host that also reads the messages).  The
    protocol is detected eagerly when not given (:class:`~normalize.Converter`);
    if detection fails, :attr:`error` holds why, the recording goes on and no
    more events come.
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
        max_line: int = DEFAULT_MAX_LINE,
        record: Callable[[bytes], object] | None = None,
        tee: Callable[[Direction, bytes], object] | None = None,
    ) -> None:
        self.converter = Converter(
            protocol=protocol,
            adapter=adapter,
            session_id=session_id,
            origin=origin,
            clock=clock,
            strict=strict,
            eager=True,
        )
        self._clock = clock if clock is not None else time.time
        self._last = float("-inf")
        self._record = record
        self._tee = tee
        self._split: dict[Direction, LineSplitter] = {"agent": LineSplitter(max_line), "client": LineSplitter(max_line)}
        self._seen = False
        #: why events stopped, or None: the protocol could not be detected
        #: (:class:`~normalize.DetectionError`), or :func:`relay` caught what
        #: normalizing raised; the recording goes on either way
        self.error: Exception | None = None
        #: set before close(): the agent's return code, and whether we stopped it
        self.returncode: int | None = None
        self.stopped = False

    @property
    def session(self) -> Session | Connection | None:
        return self.converter.session

    def _now(self) -> str:
        self._last = max(self._last, self._clock())
        return format_ts(self._last)

    def feed(self, data: bytes, from_: Direction = "agent") -> list[_Core]:
        lines = self._split[from_].feed(data)
        return self._convert(self._records(lines, from_, last=False)) if lines else []

    def _records(self, lines: list[tuple[int, bytes] | LineProblem], from_: Direction, last: bool) -> list[Record]:
        t = self._now()
        out: list[Record] = []
        for i, item in enumerate(lines):
            if isinstance(item, LineProblem):
                rec: Record = LineProblem(item.error, item.line, t)
                line, spliced = (item.error.kept or "").encode(), False
            else:
                lineno, line = item
                spliced = _is_json(line)
                if last and i == len(lines) - 1 and not spliced:
                    err = TruncatedLine(f"the {from_}'s last line ends without a newline and is not complete JSON")
                    err.kept = line[:1024].decode("utf-8", errors="replace")
                    rec = LineProblem(err, lineno, t)
                else:
                    rec = Message(line, from_, t, lineno)
                    if self._tee is not None:
                        self._tee(from_, line)
            if self._record is not None:
                self._record(tap_line(from_, line, t, spliced=spliced) + b"\n")
            out.append(rec)
        self._seen = self._seen or bool(out)
        return out

    def _convert(self, records: list[Record]) -> list[_Core]:
        if self.error is not None:
            return []
        try:
            return self.converter.feed(records)
        except DetectionError as exc:
            self.error = exc
            raise

    def problem(self, error: InputError) -> list[_Core]:
        return self._convert([LineProblem(error, 0, self._now())])

    def close(self) -> list[_Core]:
        """Both sides are done: last unterminated lines, then the Session's close()."""
        out: list[_Core] = []
        for from_ in ("agent", "client"):
            lines = self._split[from_].close()
            if lines:
                out += self._convert(self._records(lines, from_, last=True))
        if self.error is not None or not self._seen:
            return out  # nothing was said (or nothing could be understood): no session to close
        try:
            out += self.converter.close()
        except DetectionError as exc:
            self.error = exc
            raise
        return self._mark_failed(out)

    def abort(self) -> list[_Core]:
        self.stopped = True
        return self._mark_failed(self.converter.abort())

    def _mark_failed(self, out: list[_Core]) -> list[_Core]:
        # An agent killed by a signal it did not get from us failed, even between turns.
        rc = self.returncode
        if rc is None or rc >= 0 or self.stopped or not out:
            return out
        last = out[-1]
        if not (isinstance(last, SessionStateChanged) and last.state == "ended"):
            return out
        sig = -rc
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        info = ErrorInfo(message=f"the agent was killed by {name}", error_type="killed")
        return [*out[:-1], SessionFailed(session_id=last.session_id, error=info), structs.replace(last, state="failed")]


def _open_record(
    record: str | os.PathLike[str] | BinaryIO | Callable[[bytes], object] | None,
) -> tuple[Callable[[bytes], object] | None, IO[bytes] | None]:
    """A writer for tap lines (flushed per line, so a crash keeps what crossed) and the file we opened."""
    if record is None:
        return None, None
    if not isinstance(record, str | os.PathLike) and callable(record):
        return record, None
    if isinstance(record, str | os.PathLike):
        f: IO[bytes] = Path(record).open("wb")  # noqa: SIM115 - closed by the owner of the tap
        owned: IO[bytes] | None = f
    else:
        f, owned = record, None

    def write(line: bytes) -> None:
        f.write(line)
        f.flush()

    return write, owned


class AgentTap(EventStream):
    """A live agent for a Python app: what it writes and what the app sends, as CoreEvents.

    Made by :func:`tap`.  ``await send(line)`` writes to the agent's stdin;
    iterating gives the events of both directions in wire order.  Leaving the
    ``async with`` block (or cancellation) stops the agent: stdin is closed,
    SIGTERM after it, SIGKILL after :data:`GRACE` seconds.
    """

    def __init__(
        self,
        command: Sequence[str],
        wiretap: Wiretap,
        *,
        cwd: str | os.PathLike[str] | None,
        env: Mapping[str, str] | None,
        stderr: int | IO[Any] | None,
        owned: IO[bytes] | None,
    ) -> None:
        super().__init__(wiretap, self._receive, self._wait)
        self.command = list(command)
        self.wiretap = wiretap
        self._popen = {"cwd": cwd, "env": env, "stderr": stderr}
        self._owned = owned
        self._process: Process | None = None
        self._out: AgentOutput | None = None

    @property
    def process(self) -> Process:
        if self._process is None:
            raise RuntimeError("the agent is not started: use `async with normalize.tap(...)`")
        return self._process

    @property
    def returncode(self) -> int | None:
        return self.wiretap.returncode

    async def start(self) -> None:
        if self._process is None:
            out = AgentOutput()
            try:
                self._process = await anyio.open_process(
                    self.command,
                    stdin=subprocess.PIPE,
                    stdout=out.child_end,
                    stderr=self._popen["stderr"],  # type: ignore[arg-type]
                    cwd=self._popen["cwd"],  # type: ignore[arg-type]
                    env=self._popen["env"],  # type: ignore[arg-type]
                )
            except BaseException:
                out.close()
                raise
            out.started(self._process)
            self._out = out

    async def send(self, data: bytes) -> None:
        """Write bytes to the agent's stdin (a line should end with ``\\n``); they are recorded and normalized."""
        stdin = self.process.stdin
        assert stdin is not None
        self._pending.extend(self.wiretap.feed(data, "client"))  # before the agent can answer
        await stdin.send(data)

    async def close_stdin(self) -> None:
        """End of input for the agent (many agents then finish and exit)."""
        stdin = self.process.stdin
        assert stdin is not None
        await stdin.aclose()

    async def _receive(self) -> bytes:
        if self._out is None:
            raise RuntimeError("the agent is not started: use `async with normalize.tap(...)`")
        return await self._out.receive()  # b"" once the agent exited and all it wrote was read

    async def _wait(self, early: bool) -> None:
        proc = self._process
        if proc is None:
            return
        if early and proc.returncode is None:
            self.wiretap.stopped = True
            await _stop(proc)
        if self._out is not None:
            self._out.close()
        self.wiretap.returncode = await proc.wait()
        if self._owned is not None:
            self._owned.close()

    async def __aenter__(self) -> AgentTap:
        await self.start()
        return self


async def _stop(proc: Process) -> None:
    if proc.stdin is not None:
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            await proc.stdin.aclose()
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    with anyio.move_on_after(GRACE):
        await proc.wait()
        return
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


def tap(
    command: Sequence[str],
    *,
    protocol: str | None = None,
    record: str | os.PathLike[str] | BinaryIO | Callable[[bytes], object] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    stderr: int | IO[Any] | None = None,
    session_id: str | None = None,
    origin: Origin | None = None,
    clock: Clock | None = None,
    strict: bool = False,
    max_line: int = DEFAULT_MAX_LINE,
) -> AgentTap:
    """Run an agent as a child process and normalize its conversation::

        async with normalize.tap(["codex", "app-server"], record="run.tap.jsonl") as agent:
            await agent.send(b'{"jsonrpc":"2.0","id":1,"method":"initialize",...}\\n')
            async for event in agent:
                ...

    ``record`` (a path, a binary file, or a function called with each line)
    receives the tap recording.  The
    agent's stderr goes where ours goes unless ``stderr`` says otherwise.
    """
    write, owned = _open_record(record)
    wiretap = Wiretap(
        protocol=protocol,
        session_id=session_id,
        origin=origin,
        clock=clock,
        strict=strict,
        max_line=max_line,
        record=write,
    )
    return AgentTap(command, wiretap, cwd=cwd, env=env, stderr=stderr, owned=owned)


# ---------------------------------------------------------------------- the agent's stdout

#: Seconds between two looks at whether the agent exited, while its stdout is silent.
EXIT_POLL = 0.05
#: Bytes still relayed from the agent's stdout once the agent exited.  What the agent
#: wrote before exiting is all in the pipe (64 KiB on Linux, 1 MiB at most); more than
#: this comes from a grandchild that inherited the pipe, which the tap does not wait for.
DRAIN = 1 << 20


class AgentOutput:
    """The agent's stdout: a pipe of our own, read until the agent exits and the pipe is empty.

    Reading to the end of file would wait for every process holding the pipe's
    other end: a grandchild the agent left running in the background (a server,
    ``sleep 600 &``) keeps it open long after the agent exited.  So the end is
    the agent's exit: once it exited, what it wrote before is read (all of it is
    in the pipe), and the pipe is closed.  A grandchild still writing there then
    gets ``EPIPE`` (``SIGPIPE``), as in a shell pipeline whose reader exited.
    """

    def __init__(self) -> None:
        #: the read end (ours), and the write end to give the agent as its stdout
        self.fd, self.child_end = os.pipe()
        os.set_blocking(self.fd, False)
        self._proc: Process | None = None
        self._drained = 0

    def started(self, proc: Process) -> None:
        """The agent runs: our copy of the write end is closed (the end of file is the agent's)."""
        self._proc = proc
        if self.child_end >= 0:
            os.close(self.child_end)
            self.child_end = -1

    async def receive(self) -> bytes:
        """The next bytes the agent wrote, ``b""`` once it exited and they were all read."""
        while self.fd >= 0:
            exited = self._proc is not None and self._proc.returncode is not None  # looked at before reading
            if exited and self._drained >= DRAIN:
                break
            try:
                data = os.read(self.fd, CHUNK)
            except BlockingIOError:
                if exited:
                    break  # the agent exited before the pipe was found empty: everything it wrote was read
                with anyio.move_on_after(EXIT_POLL):
                    await anyio.wait_readable(self.fd)
                continue
            if exited:
                self._drained += len(data)
            return data
        return b""

    def close(self) -> None:
        """Stop reading: the agent's next write to stdout gets ``EPIPE`` (``SIGPIPE``)."""
        if self.child_end >= 0:
            os.close(self.child_end)
            self.child_end = -1
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


# ---------------------------------------------------------------------- relay


class FdReader(ByteReceiveStream):
    """Our own stdin (or any fd) as an anyio stream, read by a daemon thread.

    A thread, not O_NONBLOCK: stdin often shares its open file description with
    stdout and stderr (a terminal), and the agent inherits stderr; making it
    non-blocking would change it for them too.  The thread hands each chunk
    over and waits until it was taken, so nothing piles up.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._send, self._recv = anyio.create_memory_object_stream[bytes](0)
        self._thread: threading.Thread | None = None

    async def receive(self, max_bytes: int = CHUNK) -> bytes:
        if self._thread is None:
            token = anyio.lowlevel.current_token()
            self._thread = threading.Thread(target=self._run, args=(token,), daemon=True, name="normalize-stdin")
            self._thread.start()
        return await self._recv.receive()

    def _run(self, token: anyio.lowlevel.EventLoopToken) -> None:
        with contextlib.suppress(OSError, anyio.RunFinishedError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            while data := os.read(self.fd, CHUNK):
                anyio.from_thread.run(self._send.send, data, token=token)
        with contextlib.suppress(anyio.RunFinishedError):
            anyio.from_thread.run_sync(self._send.close, token=token)

    async def aclose(self) -> None:
        self._recv.close()


class FdWriter(ByteSendStream):
    """Our own stdout (or any fd) as an anyio stream; each write runs in a worker thread."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    async def send(self, item: bytes) -> None:
        await anyio.to_thread.run_sync(_write_all, self.fd, item)

    async def aclose(self) -> None:
        return None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class RelaySide:
    """What the relay does with each chunk besides forwarding it: the wiretap.  Sans-I/O.

    ``take(chunk, from_)`` feeds the chunk to the wiretap (recording, events) and
    returns it, unchanged, for forwarding; ``flush()`` hands the events made so far
    to ``on_events``; ``close()`` ends the wiretap.  The relay never depends on
    parsing: whatever normalizing raises (an undetectable protocol, a strict-mode
    error, a bug, a recording that cannot be written) is told once to ``on_error``
    and stops the events, and the bytes cross all the same; the recording goes on
    while it can.
    """

    def __init__(
        self,
        wiretap: Wiretap,
        on_events: Callable[[list[_Core]], object],
        on_error: Callable[[Exception], object] | None = None,
    ) -> None:
        self.wiretap = wiretap
        self._on_events = on_events
        self._on_error = on_error
        self._queue: list[_Core] = []
        self._delivering = True
        #: the first exception normalizing raised, or None
        self.failure: Exception | None = None

    def take(self, data: bytes, from_: Direction) -> bytes:
        try:
            events = self.wiretap.feed(data, from_)
        except Exception as exc:  # noqa: BLE001 - told to on_error once; the bytes cross regardless
            self._fail(exc)
        else:
            self._queue.extend(events)
        return data

    def flush(self) -> None:
        if self._queue:
            batch, self._queue = self._queue, []
            if not self._delivering:
                return
            try:
                self._on_events(batch)
            except Exception as exc:  # noqa: BLE001 - as in take(): the events stop, not the relay
                self._delivering = False
                self._fail(exc)

    def close(self) -> None:
        try:
            self._queue.extend(self.wiretap.close())
        except Exception as exc:  # noqa: BLE001 - as in take()
            self._fail(exc)
        self.flush()

    def _fail(self, exc: Exception) -> None:
        if self.wiretap.error is None:
            self.wiretap.error = exc  # no more events; tap lines are still recorded
        if self.failure is None:
            self.failure = exc
            if self._on_error is not None:
                self._on_error(exc)


async def relay(
    command: Sequence[str],
    *,
    stdin: ByteReceiveStream,
    stdout: ByteSendStream,
    wiretap: Wiretap,
    on_events: Callable[[list[_Core]], object],
    on_error: Callable[[Exception], object] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    forward_signals: bool = False,
) -> int:
    """Run ``command`` between ``stdin`` and ``stdout``, byte for byte, normalizing on the side.

    Bytes are forwarded as they arrive, in both directions, without waiting
    for whole lines; the agent's stderr is inherited.  ``on_events`` receives
    the CoreEvents in order.  Normalizing never stops the relay: if it raises
    (the protocol cannot be detected, or anything else), ``on_error`` is told
    once and the relay goes on without events (see :class:`RelaySide`).  When
    ``stdin`` ends, the agent's stdin is closed.  When ``stdout`` is closed by
    its reader, the agent's stdout is closed too, so the agent meets the closed
    pipe at its next write, as it would without the relay.  The relay ends when
    the agent exits, once what it wrote was forwarded, even if a process it left
    behind still holds its stdout (see :class:`AgentOutput`).
    ``forward_signals`` passes SIGTERM and SIGHUP to the agent and absorbs
    SIGINT (a terminal's Ctrl-C already reached the agent, which shares our
    process group); main thread only.  Returns the agent's return code
    (negative: killed by that signal).
    """
    side = RelaySide(wiretap, on_events, on_error)
    out = AgentOutput()
    try:
        proc = await anyio.open_process(
            list(command), stdin=subprocess.PIPE, stdout=out.child_end, stderr=None, cwd=cwd, env=env
        )
        out.started(proc)
        async with proc:
            assert proc.stdin is not None
            agent_in = proc.stdin

            async def upstream() -> None:
                try:
                    while True:
                        try:
                            chunk = await stdin.receive(CHUNK)
                        except anyio.EndOfStream:
                            break
                        await agent_in.send(side.take(chunk, "client"))
                        side.flush()
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    pass  # the agent closed its stdin or exited: nothing more can reach it
                finally:
                    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                        await agent_in.aclose()

            async def signals() -> None:
                with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as received:
                    async for sig in received:
                        if sig != signal.SIGINT and proc.returncode is None:
                            with contextlib.suppress(ProcessLookupError):
                                proc.send_signal(sig)

            async with anyio.create_task_group() as tg:
                tg.start_soon(upstream)
                if forward_signals:
                    tg.start_soon(signals)
                while chunk := await out.receive():
                    # fed before it is forwarded, so a reply is never seen before its cause
                    side.take(chunk, "agent")
                    try:
                        await stdout.send(chunk)
                    except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                        break  # nobody reads our stdout any more
                    side.flush()
                out.close()  # the agent meets the closed pipe at its next write, as without us
                rc = wiretap.returncode = await proc.wait()
                tg.cancel_scope.cancel()
            with contextlib.suppress(anyio.ClosedResourceError):
                await stdin.aclose()
    finally:
        out.close()
    side.close()
    return rc
