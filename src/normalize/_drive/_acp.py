"""The ACP backend: any Agent Client Protocol agent (claude-agent-acp, codex-acp, gemini --acp ...).

The rules this backend keeps (docs/drive-acp.md):

* Handshake: ``initialize`` (protocol version 1, ``fs.readTextFile``,
  ``fs.writeTextFile`` and ``terminal`` offered), then ``session/new``; with
  ``resume``, ``session/load`` when the agent advertises ``loadSession`` (its
  history comes back as replay), else ``session/resume`` when it advertises
  ``sessionCapabilities.resume``, else :class:`NotSupported`.  A ``-32000``
  (authentication required) answer to the session request raises
  :class:`AuthenticationRequired` naming the agent's ``authMethods``.
* One prompt at a time (ACP has no queue in its spec; claude-agent-acp's private
  queueing is not relied on): ``queues_prompts`` is False, so a prompt during a
  turn raises :class:`TurnRunning` before anything is sent.  The prompt is a text
  block, then one image block per image when the agent advertises
  ``promptCapabilities.image`` (:class:`NotSupported` otherwise: never dropped).
* ``session/request_permission`` is answered from :meth:`respond`: the option
  whose kind carries the decision (:func:`option_for`); ``cancel``, or a deny
  the request offers no reject option for, answers ``{"outcome": "cancelled"}``;
  an allow it offers no allow option for raises :class:`NotSupported`.
* ``elicitation/create`` is answered from ``answers`` (question id or text ->
  value): ``accept`` with the form's ``content``, each value of its field's JSON type; ``allow`` without answers accepts
  as it is (a url to visit), ``deny`` declines, ``cancel`` cancels.
* :meth:`cancel` sends the ``session/cancel`` notification, then answers every
  permission request still open with ``cancelled``, as the spec asks.
* ``set_mode``: ``session/set_mode`` when the session has ``modes``, else
  ``session/set_config_option`` on its ``mode`` option.  ``set_model``: the
  ``model`` config option, else the older ``session/set_model`` when the session
  listed ``models``.  Neither: :class:`NotSupported`.
* The client side (``fs/*``, ``terminal/*``) is served from the working
  directory and confined to it: a path that resolves (symlinks followed) outside
  it is refused with a JSON-RPC error.  Terminals are child processes (a process
  group each) whose output goes to a temporary file; ``terminal/output`` gives its
  last ``outputByteLimit`` bytes.  They are killed when the session ends or the
  agent exits.  Any other agent request is answered ``-32601``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import IO, Any, ClassVar

import anyio
from anyio.abc import Process

from .._errors import UsageError
from .._model import Decision, EventEnvelope, PermissionRequest, UserQuestion
from .._version import __version__
from ._core import (
    AgentExited,
    AgentRequestFailed,
    AuthenticationRequired,
    Backend,
    ImageData,
    NotSupported,
    Waiter,
    Wire,
    option_for,
)

__all__ = ["AcpBackend"]

PROTOCOL_VERSION = 1
#: JSON-RPC error codes of ACP.
AUTH_REQUIRED = -32000
RESOURCE_NOT_FOUND = -32002
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
#: Bytes of a terminal's output kept when the agent sets no ``outputByteLimit``: the
#: answer is one JSON line, and an agent's reader has a line limit too.
DEFAULT_OUTPUT_LIMIT = 1 << 20
#: The largest file ``fs/read_text_file`` sends (one JSON line to the agent).
MAX_READ = 16 << 20

_CLIENT_CAPABILITIES = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}
_ASKS = ("session/request_permission", "elicitation/create")


class _RpcError(Exception):
    """A request of the agent the client side refuses: answered with this JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(params: dict[str, Any], key: str) -> str:
    value = params.get(key)
    if not isinstance(value, str) or not value:
        raise _RpcError(INVALID_PARAMS, f"{key} must be a non-empty string")
    return value


class _Terminal:
    """One ``terminal/create``: a process group whose output goes to an unlinked temporary file."""

    def __init__(self, process: Process, out: IO[bytes], limit: int) -> None:
        self.process = process
        self.out = out
        self.limit = limit

    def output(self) -> tuple[str, bool]:
        """The last ``limit`` bytes of the output (cut at a character boundary) and whether any were cut."""
        fd = self.out.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - self.limit)
        data = os.pread(fd, size - start, start)
        if start:
            cut = 0
            while cut < min(len(data), 3) and data[cut] & 0xC0 == 0x80:  # a UTF-8 continuation byte
                cut += 1
            data = data[cut:]
        return data.decode("utf-8", errors="replace"), start > 0

    def status(self) -> dict[str, Any] | None:
        rc = self.process.returncode
        if rc is None:
            return None
        if rc >= 0:
            return {"exitCode": rc, "signal": None}
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = str(-rc)
        return {"exitCode": None, "signal": name}

    def kill(self) -> None:
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)

    async def close(self) -> None:
        self.kill()
        with anyio.CancelScope(shield=True):
            await self.process.wait()
        await self.process.aclose()
        self.out.close()


class _ClientSide:
    """What the client offers the agent: files and terminals inside ``root`` only."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root.resolve()
        self.env = env
        self.terminals: dict[str, _Terminal] = {}
        self._made = 0
        self.closed = False

    def path(self, raw: Any) -> Path:
        """The path, resolved (symlinks followed); outside the working directory -> an error."""
        if not isinstance(raw, str) or not raw:
            raise _RpcError(INVALID_PARAMS, "path must be a non-empty string")
        if not os.path.isabs(raw):
            raise _RpcError(INVALID_PARAMS, f"{raw}: the path must be absolute")
        path = Path(raw).resolve()
        if path != self.root and self.root not in path.parents:
            raise _RpcError(INVALID_PARAMS, f"{raw}: outside the session's working directory {self.root}")
        return path

    async def read_text_file(self, params: dict[str, Any]) -> Any:
        path = self.path(params.get("path"))
        try:
            if path.stat().st_size > MAX_READ:
                raise _RpcError(INVALID_PARAMS, f"{params['path']}: larger than {MAX_READ} bytes")
            text = path.read_bytes().decode("utf-8", errors="replace")
        except FileNotFoundError as exc:
            raise _RpcError(RESOURCE_NOT_FOUND, f"Resource not found: {params['path']}") from exc
        except IsADirectoryError as exc:
            raise _RpcError(INVALID_PARAMS, f"{params['path']}: a directory") from exc
        line, limit = params.get("line"), params.get("limit")
        if line is None and limit is None:
            return {"content": text}
        lines = text.splitlines(keepends=True)
        start = max(int(line) - 1, 0) if isinstance(line, int) else 0
        end = start + int(limit) if isinstance(limit, int) else None
        return {"content": "".join(lines[start:end])}

    async def write_text_file(self, params: dict[str, Any]) -> Any:
        path = self.path(params.get("path"))
        content = params.get("content")
        if not isinstance(content, str):
            raise _RpcError(INVALID_PARAMS, "content must be a string")
        if not path.parent.is_dir():
            raise _RpcError(RESOURCE_NOT_FOUND, f"{params['path']}: its folder does not exist")
        try:
            path.write_text(content, encoding="utf-8")
        except IsADirectoryError as exc:
            raise _RpcError(INVALID_PARAMS, f"{params['path']}: a directory") from exc
        return {}

    async def terminal_create(self, params: dict[str, Any]) -> Any:
        if self.closed:
            raise _RpcError(INTERNAL_ERROR, "the session is ending")
        command = _str(params, "command")
        args = params.get("args") or []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise _RpcError(INVALID_PARAMS, "args must be a list of strings")
        # a whole command line in ``command`` (no args, a space in it) goes to the shell
        argv = ["/bin/sh", "-c", command] if not args and " " in command else [command, *args]
        cwd = self.path(params["cwd"]) if params.get("cwd") else self.root
        env = dict(self.env)
        for var in params.get("env") or []:
            if isinstance(var, dict) and isinstance(var.get("name"), str) and isinstance(var.get("value"), str):
                env[var["name"]] = var["value"]
        limit = params.get("outputByteLimit")
        limit = limit if isinstance(limit, int) and limit >= 0 else DEFAULT_OUTPUT_LIMIT
        out = tempfile.TemporaryFile()  # noqa: SIM115 - owned by the terminal, closed on release
        try:
            process = await anyio.open_process(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            out.close()
            raise _RpcError(INTERNAL_ERROR, f"{command}: {exc.strerror or exc}") from exc
        self._made += 1
        terminal_id = f"term-{self._made}"
        self.terminals[terminal_id] = _Terminal(process, out, min(limit, DEFAULT_OUTPUT_LIMIT))
        return {"terminalId": terminal_id}

    def _terminal(self, params: dict[str, Any]) -> _Terminal:
        terminal_id = params.get("terminalId")
        terminal = self.terminals.get(terminal_id) if isinstance(terminal_id, str) else None
        if terminal is None:
            raise _RpcError(INVALID_PARAMS, f"unknown terminal {params.get('terminalId')!r}")
        return terminal

    async def terminal_output(self, params: dict[str, Any]) -> Any:
        terminal = self._terminal(params)
        output, truncated = terminal.output()
        result: dict[str, Any] = {"output": output, "truncated": truncated}
        status = terminal.status()
        if status is not None:
            result["exitStatus"] = status
        return result

    async def terminal_wait_for_exit(self, params: dict[str, Any]) -> Any:
        terminal = self._terminal(params)
        await terminal.process.wait()
        status = terminal.status()
        assert status is not None
        return status

    async def terminal_kill(self, params: dict[str, Any]) -> Any:
        self._terminal(params).kill()
        return {}

    async def terminal_release(self, params: dict[str, Any]) -> Any:
        terminal = self._terminal(params)
        del self.terminals[params["terminalId"]]
        await terminal.close()
        return {}

    async def close(self) -> None:
        """Kill every terminal (the session ends, or the agent exited)."""
        self.closed = True
        terminals, self.terminals = self.terminals, {}
        for terminal in terminals.values():
            await terminal.close()


def _typed(value: str, field: dict[str, Any], name: str) -> Any:
    """An answer as the form field's JSON type (``integer``, ``number``, ``boolean``); else the text."""
    kind = field.get("type")
    try:
        if kind == "integer":
            return int(value)
        if kind == "number":
            return float(value)
    except ValueError as exc:
        raise UsageError(f"acp: the answer to {name!r} must be of type {kind}, not {value!r}") from exc
    if kind == "boolean":
        if value.lower() not in ("true", "false", "yes", "no"):
            raise UsageError(f"acp: the answer to {name!r} must be true or false, not {value!r}")
        return value.lower() in ("true", "yes")
    return value


_Handler = Callable[[_ClientSide, dict[str, Any]], Awaitable[Any]]

#: The agent's requests the client side serves, by method.
_SERVED: dict[str, _Handler] = {
    "fs/read_text_file": _ClientSide.read_text_file,
    "fs/write_text_file": _ClientSide.write_text_file,
    "terminal/create": _ClientSide.terminal_create,
    "terminal/output": _ClientSide.terminal_output,
    "terminal/wait_for_exit": _ClientSide.terminal_wait_for_exit,
    "terminal/kill": _ClientSide.terminal_kill,
    "terminal/release": _ClientSide.terminal_release,
}


class AcpBackend(Backend):
    """Any ACP agent, its argv given as ``command`` (``["claude-agent-acp"]``, ``["gemini", "--acp"]``)."""

    name: ClassVar[str] = "acp"
    protocol: ClassVar[str] = "acp"
    program: ClassVar[str] = ""
    queues_prompts: ClassVar[bool] = False

    def __init__(self, options: Any) -> None:
        super().__init__(options)
        self.session_id: str | None = None
        #: ``initialize``'s result: ``agentCapabilities``, ``authMethods``, ``agentInfo``.
        self.agent: dict[str, Any] = {}
        #: the session's ``modes``, ``models`` and ``configOptions`` as last reported
        self.modes: dict[str, Any] | None = None
        self.models: dict[str, Any] | None = None
        self.config_options: list[dict[str, Any]] = []
        self._asks: dict[Any, str] = {}  # the agent's open permission requests and questions: id -> method
        self._client: _ClientSide | None = None

    def command(self) -> list[str]:
        if not self.options.command:
            raise UsageError("the acp backend needs the agent's command, e.g. ['claude-agent-acp']")
        return super().command()

    @property
    def capabilities(self) -> dict[str, Any]:
        return _dict(self.agent.get("agentCapabilities"))

    # ------------------------------------------------------------ the session

    async def start(self, wire: Wire) -> None:
        self._client = _ClientSide(wire.cwd, {**os.environ, **self.options.env})
        wire.start_soon(self._keeper, wire.expect(("acp", "end")), self._client)
        info = {"name": "normalize", "title": "normalize drive", "version": __version__}
        params = {"protocolVersion": PROTOCOL_VERSION, "clientCapabilities": _CLIENT_CAPABILITIES, "clientInfo": info}
        self.agent = _dict(await wire.request("initialize", params))
        version = self.agent.get("protocolVersion")
        if version != PROTOCOL_VERSION:
            raise NotSupported(f"acp: the agent speaks protocol version {version!r}; normalize speaks 1")
        where = {"cwd": str(wire.cwd), "mcpServers": []}
        resume = self.options.resume
        try:
            if resume is None:
                result = _dict(await wire.request("session/new", where))
            elif self.capabilities.get("loadSession"):
                result = _dict(await wire.request("session/load", {"sessionId": resume, **where}))
                self.session_id = resume
            elif _dict(self.capabilities.get("sessionCapabilities")).get("resume") is not None:
                result = _dict(await wire.request("session/resume", {"sessionId": resume, **where}))
                self.session_id = resume
            else:
                raise NotSupported("acp: the agent cannot load a session (no loadSession capability)")
        except AgentRequestFailed as exc:
            if exc.code == AUTH_REQUIRED:
                raise AuthenticationRequired(self._auth_message(exc)) from exc
            raise
        if resume is None:
            sid = result.get("sessionId")
            if not isinstance(sid, str):
                raise AgentRequestFailed("session/new", None, f"no sessionId in its answer: {result!r}")
            self.session_id = sid
        self._session_state(result)
        if self.options.mode is not None:
            await self.set_mode(wire, self.options.mode)
        if self.options.model is not None:
            await self.set_model(wire, self.options.model)

    def _auth_message(self, exc: AgentRequestFailed) -> str:
        methods = [m for m in self.agent.get("authMethods") or [] if isinstance(m, dict)]
        names = ", ".join(str(m.get("name") or m.get("id")) for m in methods)
        how = f"; its authentication methods: {names}" if names else ""
        return f"{self.options.command[0] if self.options.command else 'acp'}: {exc.error_message}{how}"

    def _session_state(self, result: dict[str, Any]) -> None:
        modes, models = result.get("modes"), result.get("models")
        self.modes = modes if isinstance(modes, dict) else self.modes
        self.models = models if isinstance(models, dict) else self.models
        options = result.get("configOptions")
        if isinstance(options, list):
            self.config_options = [o for o in options if isinstance(o, dict)]

    async def _keeper(self, end: Waiter, client: _ClientSide) -> None:
        """Kill the terminals once the session ends (:meth:`stop`) or the agent exits."""
        try:
            await end.wait()
        except AgentExited:
            pass
        finally:
            with anyio.CancelScope(shield=True):
                await client.close()

    async def stop(self, wire: Wire) -> None:
        wire.resolve(("acp", "end"), None)

    # ------------------------------------------------------------ what the host does

    def _session(self) -> str:
        if self.session_id is None:
            raise UsageError("acp: no session is open")
        return self.session_id

    async def prompt(self, wire: Wire, text: str, images: list[ImageData]) -> None:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if images:
            if not _dict(self.capabilities.get("promptCapabilities")).get("image"):
                raise NotSupported("acp: the agent takes no images (promptCapabilities.image is not set)")
            blocks += [{"type": "image", "mimeType": i.mime_type, "data": i.data} for i in images]
        # sent, not awaited: its answer ends the turn (the events say how); on_message passes it by
        params = {"sessionId": self._session(), "prompt": blocks}
        await wire.send({"jsonrpc": "2.0", "id": wire.next_id(), "method": "session/prompt", "params": params})

    async def respond(
        self, wire: Wire, request: EventEnvelope, decision: Decision | None, answers: dict[str, str] | None
    ) -> None:
        native = _dict(request.native.data)
        rid = native.get("id")
        body = request.body
        if isinstance(body, PermissionRequest):
            result = {"outcome": self._outcome(body, decision)}
        elif isinstance(body, UserQuestion):
            schema = _dict(_dict(_dict(native.get("params")).get("requestedSchema")).get("properties"))
            result = self._answer(body, decision, answers, schema)
        else:
            raise UsageError(f"acp: {request.kind} is not a request to answer")
        self._asks.pop(rid, None)
        await wire.reply(rid, result)

    @staticmethod
    def _outcome(body: PermissionRequest, decision: Decision | None) -> dict[str, Any]:
        if decision is None or decision == "cancel":
            return {"outcome": "cancelled"}
        option = option_for(body, decision)
        if option is not None:
            return {"outcome": "selected", "optionId": option.id}
        if decision.startswith("deny"):  # no reject option offered: not choosing any refuses too
            return {"outcome": "cancelled"}
        kinds = ", ".join(o.kind for o in body.options) or "none"
        raise NotSupported(f"acp: the request offers no option for {decision!r} (its options: {kinds})")

    @staticmethod
    def _answer(
        body: UserQuestion, decision: Decision | None, answers: dict[str, str] | None, fields: dict[str, Any]
    ) -> dict[str, Any]:
        if decision is not None and decision.startswith("deny"):
            return {"action": "decline"}
        if decision == "cancel":
            return {"action": "cancel"}
        if answers is None:  # allow: a form without fields (a url to visit) is accepted as it is
            return {"action": "accept"}
        by_id = {q.id: q for q in body.questions}  # the session keys the answers by question id
        unknown = [k for k in answers if k not in by_id]
        if unknown:
            known = ", ".join(repr(q.id) for q in body.questions)
            raise UsageError(f"acp: no question {unknown[0]!r} in request {body.request_id} (its questions: {known})")
        content: dict[str, Any] = {}
        for key, value in answers.items():
            question = by_id[key]
            if question.id == body.request_id and not question.options:
                continue  # a form without fields (a url elicitation): accepting is the answer
            content[question.id] = [value] if question.multi_select else _typed(value, _dict(fields.get(key)), key)
        return {"action": "accept", "content": content} if content else {"action": "accept"}

    async def cancel(self, wire: Wire) -> None:
        await wire.notify("session/cancel", {"sessionId": self._session()})
        for rid, method in list(self._asks.items()):
            if method == "session/request_permission":
                del self._asks[rid]
                await wire.reply(rid, {"outcome": {"outcome": "cancelled"}})

    def _config(self, category: str) -> dict[str, Any] | None:
        for option in self.config_options:
            if option.get("category") == category or option.get("id") == category:
                return option
        return None

    async def _set_config(self, wire: Wire, option: dict[str, Any], value: str) -> None:
        params = {"sessionId": self._session(), "configId": option.get("id"), "value": value}
        self._session_state(_dict(await wire.request("session/set_config_option", params)))

    async def set_mode(self, wire: Wire, mode: str) -> None:
        if self.modes is not None:
            await wire.request("session/set_mode", {"sessionId": self._session(), "modeId": mode})
            return
        option = self._config("mode")
        if option is None:
            raise NotSupported("acp: the agent offers no modes (neither modes nor a mode config option)")
        await self._set_config(wire, option, mode)

    async def set_model(self, wire: Wire, model: str) -> None:
        option = self._config("model")
        if option is not None:
            await self._set_config(wire, option, model)
            return
        if self.models is not None:
            await wire.request("session/set_model", {"sessionId": self._session(), "modelId": model})
            return
        raise NotSupported("acp: the agent offers no model choice (no model config option, no models)")

    # ------------------------------------------------------------ what the agent sends

    async def on_message(self, wire: Wire, msg: Any) -> None:
        if type(msg) is not dict:
            return
        method = msg.get("method")
        rid = msg.get("id")
        if not isinstance(method, str) or not isinstance(rid, int | str | None):
            return  # a prompt's answer, or no JSON-RPC request: the events say what came
        params = _dict(msg.get("params"))
        if "id" not in msg:  # a notification
            cancelled = params.get("requestId")
            if method == "$/cancel_request" and isinstance(cancelled, int | str):
                self._asks.pop(cancelled, None)
            update = _dict(params.get("update"))
            if method == "session/update" and update.get("sessionUpdate") == "config_option_update":
                self._session_state(update)  # the options as the agent now has them
            return
        if method in _ASKS:
            self._asks[rid] = method  # answered through respond(): the host saw its event
            return
        handler = _SERVED.get(method)
        if handler is None or self._client is None:
            await wire.reply(rid, error={"code": METHOD_NOT_FOUND, "message": f"Method not found: {method}"})
            return
        wire.start_soon(self._serve, wire, rid, handler, params)

    async def _serve(self, wire: Wire, rid: Any, handler: _Handler, params: dict[str, Any]) -> None:
        """One request of the agent, beside the reader (``terminal/wait_for_exit`` waits for a process)."""
        assert self._client is not None
        try:
            answer: dict[str, Any] = {"result": await handler(self._client, params)}
        except _RpcError as exc:
            answer = {"error": {"code": exc.code, "message": exc.message}}
        except OSError as exc:
            answer = {"error": {"code": INTERNAL_ERROR, "message": f"{exc.strerror or exc}"}}
        if wire.exited:
            return
        with contextlib.suppress(AgentExited):  # the agent went away while the request ran
            if "error" in answer:
                await wire.reply(rid, error=answer["error"])
            else:
                await wire.reply(rid, answer["result"])
