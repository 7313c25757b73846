"""Driving an agent: prompts, answers and cancel in, CoreEvents out.

A :class:`DriveSession` runs one agent as a child process and speaks its native
protocol through a :class:`Backend` (one per protocol).  What crosses the pipe is
recorded and normalized exactly as :func:`normalize.tap` does it (a
:class:`~normalize.Wiretap` sees every line of both sides), so the events of a
driven session are those ``normalize convert`` gives for its recording.

The rules the core keeps for every backend (docs/drive.md):

* The agent's stdout is read all the time, by a task of the session's own, so
  a backend can wait for an answer while nobody iterates the events; the events
  wait in the session (unbounded: a host that never reads them keeps them).
* A JSON-RPC response to a :meth:`Wire.request` resolves it; every other agent
  line goes to :meth:`Backend.on_message` after its events were queued.
* A request (``permission-request``, ``user-question``) is open from its event
  to its ``request-resolved`` or to :meth:`DriveSession.respond`; answering one
  that is not open raises :class:`UnknownRequest`, and nothing is sent.
* A turn runs from the prompt sent to its ``turn-complete`` (main thread).  A
  prompt during a turn is sent when the agent queues prompts
  (:attr:`Backend.queues_prompts`), refused with :class:`TurnRunning` otherwise.
* When the agent exits, whatever waits for it fails with :class:`AgentExited`;
  the events end with those of the Session's close (``session.failed`` when it
  died mid-turn or by a signal).
"""

from __future__ import annotations

import base64
import contextlib
import importlib
import math
import mimetypes
import os
import shutil
import signal
import subprocess
from collections import deque
from collections.abc import Callable, Coroutine, Hashable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any, BinaryIO, ClassVar

import anyio
import msgspec
from anyio.abc import Process, TaskGroup

from .._contract import Direction
from .._errors import NormalizeError, UsageError
from .._lines import DEFAULT_MAX_LINE
from .._model import (
    Decision,
    EventEnvelope,
    MessageAccepted,
    PermissionOption,
    PermissionRequest,
    RequestResolved,
    SessionEvent,
    SessionFailed,
    TurnComplete,
    TurnStart,
    UserQuestion,
    _Core,
)
from .._tap import GRACE, AgentOutput, Wiretap, _open_record, _stop

__all__ = [
    "BACKENDS",
    "AgentExited",
    "AgentNotFound",
    "AgentRequestFailed",
    "AuthenticationRequired",
    "Backend",
    "DriveError",
    "DriveOptions",
    "DriveSession",
    "ImageData",
    "NotSupported",
    "TurnRunning",
    "UnknownRequest",
    "Waiter",
    "Wire",
    "backend_class",
    "drive",
    "option_for",
]

#: The backends by agent name: ``module:Class``, imported when first used.
BACKENDS: dict[str, str] = {
    "claude": "normalize._drive._claude:ClaudeBackend",
    "codex": "normalize._drive._codex:CodexBackend",
    "acp": "normalize._drive._acp:AcpBackend",
    "hm": "normalize._drive._hm:HmBackend",
    "agy": "normalize._drive._agy:AgyBackend",
}

#: Bytes of the agent's stderr kept to explain an exit.
STDERR_TAIL = 8192
#: Seconds the end of an agent's stderr is waited for once it exited (a process it left
#: behind may hold the pipe open): its last words explain the exit.
STDERR_GRACE = 1.0
#: Seconds a backend's start (handshake, session open) may take by default.
START_TIMEOUT = 120.0

_json = msgspec.json.Decoder()
_encode = msgspec.json.Encoder().encode


# ---------------------------------------------------------------------- errors


class DriveError(NormalizeError):
    """Base of the errors a driven agent raises to its host."""


class AgentNotFound(DriveError):
    """The agent's program is not installed (not on ``PATH``, or the path given does not exist)."""


class AuthenticationRequired(DriveError):
    """The agent needs a login or an API key before it can work."""


class AgentExited(DriveError):
    """The agent exited (or was never able to answer): ``returncode`` and the end of its stderr."""

    def __init__(self, message: str, returncode: int | None = None, stderr: str = "") -> None:
        super().__init__(message if not stderr else f"{message}\n{stderr}")
        self.returncode = returncode
        self.stderr = stderr


class TurnRunning(DriveError):
    """A prompt was sent while a turn runs, to an agent that does not queue prompts."""


class UnknownRequest(DriveError, KeyError):
    """An answer for a request that is not open: never asked, or already resolved."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class AgentRequestFailed(DriveError):
    """The agent answered a request with an error (JSON-RPC ``error``: ``code``, ``message``, ``data``)."""

    def __init__(self, method: str, code: int | None, message: str, data: Any = None) -> None:
        super().__init__(f"{method}: {message}" + (f" (code {code})" if code is not None else ""))
        self.method = method
        self.code = code
        self.error_message = message
        self.data = data


class NotSupported(DriveError, UsageError):
    """The agent (or its protocol) has no such operation."""


# ---------------------------------------------------------------------- values


class ImageData(msgspec.Struct, frozen=True):
    """An image for a prompt: its media type and its bytes in base64."""

    mime_type: str
    data: str

    @classmethod
    def from_path(cls, path: str | os.PathLike[str]) -> ImageData:
        p = Path(path)
        mime = mimetypes.guess_type(p.name)[0]
        if mime is None or not mime.startswith("image/"):
            raise UsageError(f"{p}: not an image file (by its name)")
        return cls(mime, base64.b64encode(p.read_bytes()).decode("ascii"))


class DriveOptions(msgspec.Struct, kw_only=True):
    """What a host asks of the session; each backend turns it into flags or requests."""

    cwd: Path
    args: list[str] = msgspec.field(default_factory=list)
    command: list[str] | None = None
    model: str | None = None
    mode: str | None = None
    resume: str | None = None
    env: dict[str, str] = msgspec.field(default_factory=dict)


_KIND_OF: dict[str, tuple[str, ...]] = {
    "allow": ("allow_once",),
    "allow-always": ("allow_always", "allow_once"),
    "deny": ("reject_once",),
    "deny-always": ("reject_always", "reject_once"),
}


def option_for(body: PermissionRequest, decision: Decision) -> PermissionOption | None:
    """The option of ``body`` that carries ``decision`` (the closest kind when the exact one is missing)."""
    for kind in _KIND_OF.get(decision, ()):
        for option in body.options:
            if option.kind == kind:
                return option
    return None


def _by_question_id(body: UserQuestion, answers: dict[str, str]) -> dict[str, str]:
    """Answers keyed by question id; a key may also be the question's prompt, as a person reads it."""
    by_prompt = {q.prompt: q.id for q in body.questions}
    ids = {q.id for q in body.questions}
    out: dict[str, str] = {}
    for key, value in answers.items():
        qid = key if key in ids else by_prompt.get(key)
        if qid is None:
            raise UsageError(f"no question {key!r} in request {body.request_id} (ids: {', '.join(sorted(ids))})")
        out[qid] = value
    return out


class Waiter:
    """One answer a backend waits for: :meth:`Wire.resolve` gives it, the agent's exit fails it."""

    def __init__(self, key: Hashable) -> None:
        self.key = key
        self._event = anyio.Event()
        self._value: Any = None
        self._error: BaseException | None = None

    def set(self, value: Any) -> None:
        self._value = value
        self._event.set()

    def fail(self, error: BaseException) -> None:
        self._error = error
        self._event.set()

    @property
    def done(self) -> bool:
        return self._event.is_set()

    async def wait(self, timeout: float | None = None) -> Any:
        with anyio.fail_after(timeout if timeout is not None else math.inf):
            await self._event.wait()
        if self._error is not None:
            raise self._error
        return self._value


# ---------------------------------------------------------------------- the wire


class Wire:
    """What a backend speaks through: lines to the agent, answers it waits for."""

    def __init__(self, session: DriveSession) -> None:
        self._session = session
        self.cwd = session.options.cwd
        self._waiters: dict[Hashable, Waiter] = {}
        self._next_id = 0
        self._head: dict[str, Any] = {"jsonrpc": "2.0"} if session.backend.jsonrpc else {}

    @property
    def exited(self) -> bool:
        return self._session._exited

    def start_soon(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        """Run a handler beside the reader: what waits for the agent (or a child process) must run here.

        :meth:`Backend.on_message` runs on the task that reads the agent, so it must
        not wait for another agent line; a handler that does (an ACP
        ``terminal/wait_for_exit``) is started with this.
        """
        group = self._session._group
        if group is None:
            raise UsageError("the session is not running")
        group.start_soon(func, *args)

    async def send(self, msg: Any) -> None:
        """One JSON line to the agent's stdin: recorded and normalized first, as ``tap`` does."""
        line = msg if isinstance(msg, bytes) else _encode(msg)
        await self._session._send(line + b"\n")

    def signal(self, signum: signal.Signals) -> None:
        """Send a signal to the agent: the interrupt of a protocol that has no message for it (agy's SIGINT)."""
        proc = self._session._process
        if proc is None:
            raise UsageError("the session is not running")
        if self._session._exited:
            raise self._session._exit_error()
        proc.send_signal(signum)

    def next_id(self) -> int:
        self._next_id += 1
        return self._next_id

    async def request(self, method: str, params: Any = None, *, timeout: float | None = None) -> Any:
        """A JSON-RPC request; its ``result``, or :class:`AgentRequestFailed` for an ``error``."""
        rid = self.next_id()
        waiter = self.expect(("rpc", rid))
        msg: dict[str, Any] = {**self._head, "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        try:
            await self.send(msg)
            reply = await waiter.wait(timeout)
        finally:
            self._waiters.pop(("rpc", rid), None)
        error = reply.get("error")
        if error is not None:
            if not isinstance(error, dict):
                error = {"message": str(error)}
            code = error.get("code")
            raise AgentRequestFailed(
                method, code if isinstance(code, int) else None, str(error.get("message", "")), error.get("data")
            )
        return reply.get("result")

    async def notify(self, method: str, params: Any = None) -> None:
        msg: dict[str, Any] = {**self._head, "method": method}
        if params is not None:
            msg["params"] = params
        await self.send(msg)

    async def reply(self, id: Any, result: Any = None, *, error: dict[str, Any] | None = None) -> None:
        """Answer a JSON-RPC request of the agent."""
        msg: dict[str, Any] = {**self._head, "id": id}
        if error is not None:
            msg["error"] = error
        else:
            msg["result"] = result
        await self.send(msg)

    def expect(self, key: Hashable) -> Waiter:
        """Something the backend waits for, resolved by :meth:`resolve` (or failed when the agent exits)."""
        waiter = Waiter(key)
        if self._session._exited:
            waiter.fail(self._session._exit_error())
        self._waiters[key] = waiter
        return waiter

    def resolve(self, key: Hashable, value: Any) -> bool:
        waiter = self._waiters.pop(key, None)
        if waiter is None:
            return False
        waiter.set(value)
        return True

    def fail(self, key: Hashable, error: BaseException) -> bool:
        waiter = self._waiters.pop(key, None)
        if waiter is None:
            return False
        waiter.fail(error)
        return True

    def _response(self, msg: Any) -> bool:
        """A JSON-RPC response to one of our requests: resolve it."""
        if type(msg) is not dict or "method" in msg or ("result" not in msg and "error" not in msg):
            return False
        rid = msg.get("id")
        if type(rid) is not int:
            return False
        return self.resolve(("rpc", rid), msg)

    def _fail_all(self, error: BaseException) -> None:
        waiters, self._waiters = self._waiters, {}
        for waiter in waiters.values():
            waiter.fail(error)


# ---------------------------------------------------------------------- backends


class Backend:
    """One agent protocol, spoken from the host's side.  Subclasses override what their agent has."""

    name: ClassVar[str] = ""
    protocol: ClassVar[str] = ""
    program: ClassVar[str] = ""
    #: True: the agent queues a prompt sent during a turn.  False: the session refuses it first.
    queues_prompts: ClassVar[bool] = False
    #: False: the agent's JSON-RPC has no ``"jsonrpc": "2.0"`` member (Codex app-server's
    #: dialect), so :class:`Wire` leaves it out and the recording reads as the agent's own.
    jsonrpc: ClassVar[bool] = True

    def __init__(self, options: DriveOptions) -> None:
        self.options = options

    def command(self) -> list[str]:
        """The agent's argv: its program (or ``command``), the backend's :meth:`flags`, then ``args``."""
        return [*(self.options.command or [self.program]), *self.flags(), *self.options.args]

    def flags(self) -> list[str]:
        """What the backend adds to the program: its protocol mode, and the options it takes as flags."""
        return []

    def environment(self) -> dict[str, str]:
        """Variables the backend adds to the agent's environment."""
        return {}

    async def start(self, wire: Wire) -> None:
        """Handshake and open (or resume) the session; return when a prompt can be sent."""

    async def prompt(self, wire: Wire, text: str, images: list[ImageData]) -> None:
        raise NotImplementedError

    async def respond(
        self, wire: Wire, request: EventEnvelope, decision: Decision | None, answers: dict[str, str] | None
    ) -> None:
        raise NotImplementedError

    async def cancel(self, wire: Wire) -> None:
        raise NotSupported(f"{self.name}: cancel is not supported")

    async def set_mode(self, wire: Wire, mode: str) -> None:
        raise NotSupported(f"{self.name}: the agent has no modes to set")

    async def set_model(self, wire: Wire, model: str) -> None:
        raise NotSupported(f"{self.name}: the model cannot be changed during a session")

    async def on_message(self, wire: Wire, msg: Any) -> None:
        """An agent line that answers none of the wire's requests (a request of the agent, a notification)."""

    async def stop(self, wire: Wire) -> None:
        """A polite end before stdin is closed."""


def backend_class(agent: str) -> type[Backend]:
    """The backend for an agent name (``claude``, ``codex``, ``acp``, ``hm``, ``agy``)."""
    target = BACKENDS.get(agent)
    if target is None:
        raise UsageError(f"no backend for agent {agent!r}; known: {', '.join(sorted(BACKENDS))}")
    module, _, name = target.partition(":")
    cls: type[Backend] = getattr(importlib.import_module(module), name)
    return cls


# ---------------------------------------------------------------------- the session


class DriveSession:
    """One driven agent.  Made by :func:`drive`; use it as ``async with``."""

    def __init__(
        self,
        backend: Backend,
        *,
        record: str | os.PathLike[str] | BinaryIO | Callable[[bytes], object] | None = None,
        stderr: int | IO[Any] | None = None,
        strict: bool = False,
        max_line: int = DEFAULT_MAX_LINE,
        start_timeout: float | None = START_TIMEOUT,
    ) -> None:
        self.backend = backend
        self.options = backend.options
        self._write_record, self._owned = _open_record(record)
        self.wiretap = Wiretap(
            protocol=backend.protocol, strict=strict, max_line=max_line, record=self._write_record, tee=self._tee
        )
        self._stderr_to = stderr
        self._start_timeout = start_timeout
        self._agent_lines: list[bytes] = []  # split by the wiretap, for the backend
        self._events: deque[_Core] = deque()
        self._changed = anyio.Event()
        self._ended = False  # no more events will come
        self._exited = False
        self._closed = False
        self._returncode: int | None = None
        self._stderr_tail = bytearray()
        self._stderr_read = anyio.Event()  # set when the stderr reader has read to the end (or none runs)
        self._process: Process | None = None
        self._out: AgentOutput | None = None
        self._group: TaskGroup | None = None
        self._send_lock = anyio.Lock()
        self._requests: dict[str, EventEnvelope] = {}
        self._resolved: set[str] = set()
        self._accepted: list[str] = []
        self._turn_running = False
        self._turns: list[str] = []  # how each turn ended: "ok" / "interrupt"
        self.wire = Wire(self)

    # ------------------------------------------------------------ what a host reads

    @property
    def turn_running(self) -> bool:
        return self._turn_running

    @property
    def turns(self) -> list[str]:
        """How each completed turn ended (``ok``, ``interrupt``), in order."""
        return list(self._turns)

    @property
    def open_requests(self) -> dict[str, EventEnvelope]:
        """The permission requests and questions waiting for :meth:`respond`, by request id."""
        return dict(self._requests)

    @property
    def returncode(self) -> int | None:
        return self._returncode

    @property
    def session_id(self) -> str | None:
        session = self.wiretap.session
        return getattr(session, "session_id", None) if session is not None else None

    def __aiter__(self) -> DriveSession:
        return self

    async def __anext__(self) -> _Core:
        event = await self.next_event()
        if event is None:
            raise StopAsyncIteration
        return event

    async def next_event(self) -> _Core | None:
        """The next event, or None once the session ended and every event was read."""
        while not self._events:
            if self._ended:
                return None
            await self._wait_change()
        return self._events.popleft()

    def turn(self, text: str, *, images: Sequence[str | os.PathLike[str] | ImageData] = ()) -> Turn:
        """Prompt, then the events up to this turn's ``turn-complete`` (or the end of the session)::

        async for event in session.turn("fix the test"):
            ...
        """
        return Turn(self, text, images)

    # ------------------------------------------------------------ what a host does

    async def prompt(self, text: str, *, images: Sequence[str | os.PathLike[str] | ImageData] = ()) -> str | None:
        """Send a prompt (a turn); its ``messageId`` once the agent accepted it (None if it never says)."""
        self._check_alive()
        if self._turn_running and not self.backend.queues_prompts:
            raise TurnRunning(f"{self.backend.name}: a turn is running; wait for its turn-complete or cancel it")
        data = [i if isinstance(i, ImageData) else ImageData.from_path(i) for i in images]
        mark = len(self._accepted)
        self._turn_running = True
        try:
            await self.backend.prompt(self.wire, text, data)
        except BaseException:
            if len(self._accepted) == mark:
                self._turn_running = False
            raise
        while len(self._accepted) == mark:
            if self._exited:
                raise self._exit_error()
            await self._wait_change()
        return self._accepted[mark]

    async def respond(
        self,
        request_id: str,
        decision: Decision | None = None,
        *,
        answers: dict[str, str] | None = None,
    ) -> None:
        """Answer a ``permission-request`` (a decision) or a ``user-question`` (``answers``: question -> answer).

        A question is named by its ``id`` or its ``prompt``; backends get the answers keyed by id.
        """
        self._check_alive()
        request = self._requests.get(request_id)
        if request is None:
            state = "already resolved" if request_id in self._resolved else "not open (never asked)"
            raise UnknownRequest(f"request {request_id!r} is {state}")
        if isinstance(request.body, PermissionRequest) and decision is None:
            raise UsageError("a permission request needs a decision: allow, allow-always, deny, deny-always or cancel")
        if isinstance(request.body, UserQuestion) and decision is None and answers is None:
            raise UsageError("a question needs answers (or decision='cancel')")
        if answers is not None and isinstance(request.body, UserQuestion):
            answers = _by_question_id(request.body, answers)
        await self.backend.respond(self.wire, request, decision, answers)
        if self._requests.pop(request_id, None) is not None:
            self._resolved.add(request_id)

    async def cancel(self) -> None:
        """Cancel the running turn (its ``turn-complete`` says ``interrupt``)."""
        self._check_alive()
        await self.backend.cancel(self.wire)

    async def set_mode(self, mode: str) -> None:
        self._check_alive()
        await self.backend.set_mode(self.wire, mode)

    async def set_model(self, model: str) -> None:
        self._check_alive()
        await self.backend.set_model(self.wire, model)

    # ------------------------------------------------------------ life

    async def __aenter__(self) -> DriveSession:
        await self.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def start(self) -> None:
        command = self.backend.command()
        program = command[0]
        if os.sep not in program and shutil.which(program) is None:
            self._close_record()
            raise AgentNotFound(f"{program}: not found on PATH (is {self.backend.name} installed?)")
        env = {**os.environ, **self.backend.environment(), **self.options.env}
        out = AgentOutput()
        try:
            self._process = await anyio.open_process(
                command,
                stdin=subprocess.PIPE,
                stdout=out.child_end,
                stderr=subprocess.PIPE if self._stderr_to is None else self._stderr_to,
                cwd=self.options.cwd,
                env=env,
            )
        except FileNotFoundError as exc:
            out.close()
            self._close_record()
            raise AgentNotFound(f"{program}: not found ({exc.strerror})") from exc
        except BaseException:
            out.close()
            self._close_record()
            raise
        out.started(self._process)
        self._out = out
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        self._group.start_soon(self._read)
        if self._process.stderr is not None:
            self._group.start_soon(self._read_stderr)
        else:
            self._stderr_read.set()
        try:
            with anyio.fail_after(self._start_timeout if self._start_timeout is not None else math.inf):
                await self.backend.start(self.wire)
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """End the session: the backend's polite end, stdin closed, the agent stopped if it lingers."""
        proc, group = self._process, self._group
        if proc is None or group is None or self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            if not self._exited:
                with contextlib.suppress(DriveError, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    with anyio.move_on_after(GRACE):
                        await self.backend.stop(self.wire)
            if proc.stdin is not None:
                with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    await proc.stdin.aclose()
            with anyio.move_on_after(GRACE):
                await proc.wait()
            if proc.returncode is None:
                self.wiretap.stopped = True
                await _stop(proc)
        # the reader ends with the agent; the task group is left outside the shield (scopes nest)
        await group.__aexit__(None, None, None)
        self._group = None
        self._close_record()

    def _close_record(self) -> None:
        """Close the recording file the session opened (also when the agent never started)."""
        if self._owned is not None:
            self._owned.close()
            self._owned = None

    # ------------------------------------------------------------ the reading side

    async def _read(self) -> None:
        out, proc = self._out, self._process
        assert out is not None
        assert proc is not None
        try:
            while data := await out.receive():
                self._queue(self.wiretap.feed(data, "agent"))
                lines, self._agent_lines = self._agent_lines, []
                for line in lines:
                    await self._dispatch(line)
        finally:
            out.close()
            with anyio.CancelScope(shield=True):
                self._returncode = await proc.wait()
                # the exit's error carries the end of stderr, which a concurrent reader may
                # not have read yet when stdout ends
                with anyio.move_on_after(STDERR_GRACE):
                    await self._stderr_read.wait()
            self.wiretap.returncode = self._returncode
            self._exited = True
            self.wire._fail_all(self._exit_error())
            self._queue(self.wiretap.close())
            self._ended = True
            self._notify()

    def _tee(self, from_: Direction, line: bytes) -> None:
        if from_ == "agent":
            self._agent_lines.append(line)

    async def _dispatch(self, line: bytes) -> None:
        try:
            msg = _json.decode(line)
        except (msgspec.DecodeError, RecursionError):
            return  # not JSON: its error event came from the wiretap; nothing for the backend
        if self.wire._response(msg):
            return
        await self.backend.on_message(self.wire, msg)

    async def _read_stderr(self) -> None:
        proc = self._process
        assert proc is not None
        assert proc.stderr is not None
        try:
            with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                async for chunk in proc.stderr:
                    self._stderr_tail += chunk
                    del self._stderr_tail[:-STDERR_TAIL]
        finally:
            self._stderr_read.set()

    async def _send(self, line: bytes) -> None:
        proc = self._process
        if proc is None or proc.stdin is None:
            raise UsageError("the session is not started (use `async with normalize.drive(...)`)")
        if self._exited:
            raise self._exit_error()
        # shielded: a line is written whole or not at all, whatever cancels the caller
        with anyio.CancelScope(shield=True):
            async with self._send_lock:
                self._queue(self.wiretap.feed(line, "client"))  # before the agent can answer
                try:
                    await proc.stdin.send(line)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                    # the agent is gone: its exit status and the end of its stderr come with the
                    # reader's end, which may not have come yet (an agent that exits at once)
                    with anyio.move_on_after(GRACE):
                        while not self._exited:
                            await self._wait_change()
                    raise self._exit_error() from exc

    # ------------------------------------------------------------ state from the events

    def _queue(self, events: list[_Core]) -> None:
        if not events:
            return
        for event in events:
            self._track(event)
        self._events.extend(events)
        self._notify()

    def _track(self, event: _Core) -> None:
        if type(event) is MessageAccepted:
            self._accepted.append(event.message_id)
            return
        if type(event) is not SessionEvent:
            return
        env = event.event
        body = env.body
        if type(body) is PermissionRequest or type(body) is UserQuestion:
            self._requests[body.request_id] = env
        elif type(body) is RequestResolved:
            if self._requests.pop(body.request_id, None) is not None:
                self._resolved.add(body.request_id)
        elif env.subagent_id is None and env.origin != "replay":  # a resumed session's history is not a turn
            if type(body) is TurnStart:
                self._turn_running = True
            elif type(body) is TurnComplete:
                self._turn_running = False
                self._turns.append(body.reason)

    @staticmethod
    def _is_turn_end(event: _Core) -> bool:
        return (
            type(event) is SessionEvent
            and type(event.event.body) is TurnComplete
            and event.event.subagent_id is None
            and event.event.origin != "replay"
        )

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def _wait_change(self) -> None:
        await self._changed.wait()

    def _check_alive(self) -> None:
        if self._process is None or self._closed:
            raise UsageError("the session is not started (use `async with normalize.drive(...)`) or is closed")
        if self._exited:
            raise self._exit_error()

    def _exit_error(self) -> AgentExited:
        tail = bytes(self._stderr_tail).decode("utf-8", errors="replace").strip()
        rc = self._returncode
        how = "exited" if rc is None else f"exited with status {rc}" if rc >= 0 else f"was killed by signal {-rc}"
        return AgentExited(f"{self.backend.name}: the agent {how}", rc, tail)


class Turn:
    """The events of one prompt's turn: made by :meth:`DriveSession.turn`.

    The prompt is sent when the iteration starts; it stops after the turn's
    ``turn-complete`` (main thread), a ``session.failed``, or the end of the session.
    Leaving early leaves the remaining events in the session, for the next reader.
    """

    def __init__(self, session: DriveSession, text: str, images: Sequence[str | os.PathLike[str] | ImageData]) -> None:
        self.session = session
        self.text = text
        self.images = images
        #: the prompt's ``messageId`` once sent
        self.message_id: str | None = None
        self._done: int | None = None
        self._over = False

    def __aiter__(self) -> Turn:
        return self

    async def __anext__(self) -> _Core:
        s = self.session
        if self._done is None:
            # a prompt queued behind a running turn (agents that queue) has its turn after that one
            self._done = len(s._turns) + (1 if s._turn_running else 0)
            self.message_id = await s.prompt(self.text, images=self.images)
        if self._over:
            raise StopAsyncIteration
        event = await s.next_event()
        if event is None:
            raise StopAsyncIteration
        if type(event) is SessionFailed or (len(s._turns) > self._done and s._is_turn_end(event)):
            self._over = True
        return event


def drive(
    agent: str | type[Backend],
    *,
    cwd: str | os.PathLike[str] | None = None,
    args: Sequence[str] = (),
    command: Sequence[str] | None = None,
    model: str | None = None,
    mode: str | None = None,
    resume: str | None = None,
    env: Mapping[str, str] | None = None,
    record: str | os.PathLike[str] | BinaryIO | Callable[[bytes], object] | None = None,
    stderr: int | IO[Any] | None = None,
    strict: bool = False,
    start_timeout: float | None = START_TIMEOUT,
) -> DriveSession:
    """Run an agent and drive it through one API::

        async with normalize.drive("codex", cwd="project") as session:
            async for event in session.turn("fix the failing test"):
                ...

    ``agent``: ``claude``, ``codex``, ``acp`` (``command`` required: the ACP agent's
    argv), ``hm``, ``agy``, or a :class:`Backend` class.  ``command`` replaces the
    agent's program (a path, or a wrapper); ``args`` are appended to its argv.
    ``record`` receives the tap recording of the wire.  The agent's stderr is kept
    (its end explains an exit) unless ``stderr`` says where it goes.
    """
    cls = backend_class(agent) if isinstance(agent, str) else agent
    options = DriveOptions(
        cwd=Path(cwd if cwd is not None else os.getcwd()).resolve(),
        args=list(args),
        command=list(command) if command else None,
        model=model,
        mode=mode,
        resume=resume,
        env=dict(env or {}),
    )
    backend = cls(options)
    backend.command()  # what the backend cannot run (acp without its command) is said here, not at start
    return DriveSession(backend, record=record, stderr=stderr, strict=strict, start_timeout=start_timeout)
