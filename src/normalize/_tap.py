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
    try:
        _raw.decode(line)
    except msgspec.DecodeError:
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
    tap line (with its newline) as soon as its wire line is complete.  The
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
        self._split: dict[Direction, LineSplitter] = {"agent": LineSplitter(max_line), "client": LineSplitter(max_line)}
        self._seen = False
        #: why events stopped (the protocol could not be detected), or None
        self.error: DetectionError | None = None
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
            self._process = await anyio.open_process(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._popen["stderr"],  # type: ignore[arg-type]
                cwd=self._popen["cwd"],  # type: ignore[arg-type]
                env=self._popen["env"],  # type: ignore[arg-type]
            )

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
        stdout = self.process.stdout
        assert stdout is not None
        try:
            return await stdout.receive(CHUNK)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return b""

    async def _wait(self, early: bool) -> None:
        proc = self._process
        if proc is None:
            return
        if early and proc.returncode is None:
            self.wiretap.stopped = True
            await _stop(proc)
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


async def relay(
    command: Sequence[str],
    *,
    stdin: ByteReceiveStream,
    stdout: ByteSendStream,
    wiretap: Wiretap,
    on_events: Callable[[list[_Core]], object],
    on_error: Callable[[InputError], object] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    forward_signals: bool = False,
) -> int:
    """Run ``command`` between ``stdin`` and ``stdout``, byte for byte, normalizing on the side.

    Bytes are forwarded as they arrive, in both directions, without waiting
    for whole lines; the agent's stderr is inherited.  ``on_events`` receives
    the CoreEvents in order; ``on_error`` is told once if the protocol cannot be
    detected (the relay goes on without events).  When ``stdin`` ends, the
    agent's stdin is closed.  ``forward_signals`` passes SIGTERM and SIGHUP to
    the agent and absorbs SIGINT (a terminal's Ctrl-C already reached the agent,
    which shares our process group); main thread only.  Returns the agent's
    return code (negative: killed by that signal).
    """
    queue: list[_Core] = []

    def take(data: bytes, from_: Direction) -> None:
        # Feeding happens before forwarding, so a reply is never seen before its cause.
        try:
            queue.extend(wiretap.feed(data, from_))
        except DetectionError as exc:
            if on_error is not None:
                on_error(exc)

    def flush() -> None:
        if queue:
            batch = queue[:]
            queue.clear()
            on_events(batch)

    async with await anyio.open_process(
        list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, cwd=cwd, env=env
    ) as proc:
        assert proc.stdin is not None
        assert proc.stdout is not None
        agent_in, agent_out = proc.stdin, proc.stdout

        async def upstream() -> None:
            try:
                while True:
                    try:
                        chunk = await stdin.receive(CHUNK)
                    except anyio.EndOfStream:
                        break
                    take(chunk, "client")
                    await agent_in.send(chunk)
                    flush()
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
            while True:
                try:
                    chunk = await agent_out.receive(CHUNK)
                except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    break
                take(chunk, "agent")
                await stdout.send(chunk)
                flush()
            rc = wiretap.returncode = await proc.wait()
            tg.cancel_scope.cancel()
        with contextlib.suppress(anyio.ClosedResourceError):
            await stdin.aclose()
    try:
        queue.extend(wiretap.close())
    except DetectionError as exc:
        if on_error is not None:
            on_error(exc)
    flush()
    return rc
