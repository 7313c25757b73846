"""The Codex backend: ``codex app-server`` driven over its JSON-RPC on stdio.

Facts (codex-cli 0.171.0, checked against the real binary):

* Handshake: ``initialize`` (``clientInfo``) then the ``initialized`` notification;
  any other request before it is refused ("Not initialized").  No ``jsonrpc`` member
  in either direction.
* ``account/read`` (``refreshToken: false``) says whether the configured provider
  needs an OpenAI login (``requiresOpenaiAuth``) and which account is logged in
  (``account``, null when none).  A provider of the user's own (``model_provider``
  with a ``base_url``) answers ``requiresOpenaiAuth: false``; the default OpenAI
  provider with no login answers ``account: null, requiresOpenaiAuth: true``, even
  when ``OPENAI_API_KEY`` is set in the environment.  A provider whose ``env_key``
  is missing is not seen here: the first turn fails with "Missing environment
  variable" (an ``error`` event, then ``turn/completed`` ``failed``).
* ``thread/start`` (``cwd``, ``model``, ``approvalPolicy``, ``sandbox``) or
  ``thread/resume`` (``threadId`` and the same overrides) opens the thread; the
  result's ``thread.id`` is the native session id.
* ``turn/start`` returns the turn (its id is the normalized ``messageId``).
  Sent while a turn runs, it does **not** start a second turn: its input is
  added to the running turn (the result names the running turn's id, the model
  request in flight is dropped and the turn goes on with both inputs, ending
  once).  One prompt would then not be one turn, so this backend refuses a
  prompt during a turn (``queues_prompts = False``: ``TurnRunning``).
* ``turn/start`` takes ``model`` ("for this turn and subsequent turns"),
  ``approvalPolicy`` and ``sandboxPolicy`` overrides; ``collaborationMode``
  (plan mode) is refused without the experimental API ("requires
  experimentalApi capability").
* Images: ``{"type": "image", "url": "data:<mime>;base64,<data>"}`` reaches the
  model as an ``input_image``.
* Approval answers ``{"decision": ...}``: ``accept``, ``acceptForSession``,
  ``decline`` (the turn goes on), ``cancel`` (the turn stops).  ``availableDecisions``
  lists neither ``acceptForSession`` nor ``decline``, yet both are accepted.
* ``turn/interrupt`` (``threadId``, ``turnId``) answers ``{}``; the turn then
  completes ``interrupted``.
* Closing stdin ends the app-server at once (exit 0), even during a turn: the turn
  is cut, never completed.  ``stop`` interrupts a running turn first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from .._errors import UsageError
from .._model import Decision, EventEnvelope
from .._version import __version__
from ._core import (
    AgentRequestFailed,
    AuthenticationRequired,
    Backend,
    DriveOptions,
    ImageData,
    NotSupported,
    UnknownRequest,
    Wire,
)

__all__ = ["APPROVAL_DECISIONS", "MODES", "CodexBackend"]

#: The normalized decisions as Codex's approval decisions (commands and file changes).
#: Codex has no "deny from now on": ``deny-always`` declines this one.
APPROVAL_DECISIONS: dict[str, str] = {
    "allow": "accept",
    "allow-always": "acceptForSession",
    "deny": "decline",
    "deny-always": "decline",
    "cancel": "cancel",
}

#: ``set_mode`` / ``mode=``: Codex's approval presets, as ``turn/start`` overrides
#: (``approvalPolicy`` and ``sandboxPolicy``) and as ``thread/start`` settings
#: (``approvalPolicy`` and ``sandbox``).
MODES: dict[str, tuple[str, dict[str, Any], str]] = {
    "read-only": ("on-request", {"type": "readOnly"}, "read-only"),
    "auto": ("on-request", {"type": "workspaceWrite"}, "workspace-write"),
    "full-access": ("never", {"type": "dangerFullAccess"}, "danger-full-access"),
}

_APPROVALS = frozenset({"item/commandExecution/requestApproval", "item/fileChange/requestApproval"})
_PERMISSIONS = "item/permissions/requestApproval"
_USER_INPUT = "item/tool/requestUserInput"
_ELICITATION = "mcpServer/elicitation/request"
#: The agent's requests a host answers through ``respond`` (they become
#: ``permission-request`` / ``user-question`` events); any other is refused at once.
_ANSWERED_BY_HOST = _APPROVALS | {_PERMISSIONS, _USER_INPUT, _ELICITATION}

#: What :meth:`CodexBackend.stop` waits for: the running turn's ``turn/completed``.
_TURN_ENDED = ("codex", "turn/completed")

#: JSON-RPC "method not found", for the agent's requests normalize does not serve.
_METHOD_NOT_FOUND = -32601


class CodexBackend(Backend):
    """``codex app-server``: one thread, one ``turn/start`` per prompt."""

    name: ClassVar[str] = "codex"
    protocol: ClassVar[str] = "codex-app-server"
    program: ClassVar[str] = "codex"
    queues_prompts: ClassVar[bool] = False
    jsonrpc: ClassVar[bool] = False

    def __init__(self, options: DriveOptions) -> None:
        super().__init__(options)
        self.thread_id: str | None = None
        self.turn_id: str | None = None  # the running turn
        self._ended: str | None = None  # the last turn completed (its end can overtake turn/start's answer)
        self._next_turn: dict[str, Any] = {}  # overrides for the next turn/start

    def flags(self) -> list[str]:
        return ["app-server"]

    # ------------------------------------------------------------ session

    async def start(self, wire: Wire) -> None:
        info = {"name": "normalize", "title": "normalize drive", "version": __version__}
        await wire.request("initialize", {"clientInfo": info})
        await wire.notify("initialized")
        account = await wire.request("account/read", {"refreshToken": False})
        if isinstance(account, Mapping) and account.get("requiresOpenaiAuth") and account.get("account") is None:
            raise AuthenticationRequired(
                "codex: not logged in (account/read: no account, and the provider needs an OpenAI login); "
                "run `codex login`, or configure a model_provider of your own"
            )
        params: dict[str, Any] = {"cwd": str(wire.cwd)}
        if self.options.model:
            params["model"] = self.options.model
        if self.options.mode:
            policy, _, sandbox = _mode(self.options.mode)
            params |= {"approvalPolicy": policy, "sandbox": sandbox}
        if self.options.resume:
            result = await wire.request("thread/resume", {"threadId": self.options.resume, **params})
        else:
            result = await wire.request("thread/start", params)
        self.thread_id = str(result["thread"]["id"])

    async def prompt(self, wire: Wire, text: str, images: list[ImageData]) -> None:
        items: list[dict[str, Any]] = [{"type": "text", "text": text, "text_elements": []}]
        items += [{"type": "image", "url": f"data:{im.mime_type};base64,{im.data}"} for im in images]
        params = {"threadId": self._thread(), "input": items, **self._next_turn}
        result = await wire.request("turn/start", params)
        self._next_turn = {}  # Codex keeps them for the turns after this one
        turn = str(result["turn"]["id"])
        if self.turn_id is None and turn != self._ended:
            self.turn_id = turn

    async def cancel(self, wire: Wire) -> None:
        turn = self.turn_id
        if turn is None:
            return  # no turn runs: nothing to stop
        try:
            await wire.request("turn/interrupt", {"threadId": self._thread(), "turnId": turn})
        except AgentRequestFailed:
            if self.turn_id == turn:
                raise
            # the turn ended while the interrupt was on its way: nothing left to stop

    async def stop(self, wire: Wire) -> None:
        """A turn still running is interrupted, and its end awaited: closing stdin alone would cut it."""
        if self.turn_id is None or wire.exited:
            return
        ended = wire.expect(_TURN_ENDED)
        await self.cancel(wire)
        if self.turn_id is not None:
            await ended.wait()

    async def set_model(self, wire: Wire, model: str) -> None:
        self._next_turn["model"] = model

    async def set_mode(self, wire: Wire, mode: str) -> None:
        policy, sandbox, _ = _mode(mode)
        self._next_turn |= {"approvalPolicy": policy, "sandboxPolicy": sandbox}

    # ------------------------------------------------------------ the agent's requests

    async def respond(
        self,
        wire: Wire,
        request: EventEnvelope,
        decision: Decision | None,
        answers: dict[str, str] | None,
    ) -> None:
        msg = request.native.data
        if not isinstance(msg, Mapping) or "id" not in msg or msg.get("method") not in _ANSWERED_BY_HOST:
            raise UnknownRequest(f"codex: {request.body!r} did not come from a request Codex waits an answer to")
        method = str(msg["method"])
        raw_params = msg.get("params")
        params: Mapping[str, Any] = raw_params if isinstance(raw_params, Mapping) else {}
        if method in _APPROVALS:
            await wire.reply(msg["id"], {"decision": APPROVAL_DECISIONS[_needed(decision)]})
        elif method == _PERMISSIONS:
            await wire.reply(msg["id"], _permissions_answer(params, _needed(decision)))
        elif method == _USER_INPUT:
            if decision == "cancel" or answers is None:
                await wire.reply(msg["id"], error={"code": -32000, "message": "the user cancelled the question"})
            else:
                await wire.reply(msg["id"], {"answers": _user_input_answers(params, answers)})
        else:
            await wire.reply(msg["id"], _elicitation_answer(params, str(msg["id"]), decision, answers))

    async def on_message(self, wire: Wire, msg: Any) -> None:
        if not isinstance(msg, Mapping):
            return
        method = msg.get("method")
        if not isinstance(method, str):
            return
        if "id" in msg:  # a request of the agent's
            if method not in _ANSWERED_BY_HOST:
                error = {"code": _METHOD_NOT_FOUND, "message": f"normalize does not serve {method}"}
                await wire.reply(msg["id"], error=error)
            return
        params = msg.get("params")
        if not isinstance(params, Mapping) or params.get("threadId") != self.thread_id:
            return
        turn = params.get("turn")
        if method == "turn/started" and isinstance(turn, Mapping):
            self.turn_id = str(turn.get("id"))
        elif method == "turn/completed" and isinstance(turn, Mapping):
            self._ended = str(turn.get("id"))
            if self._ended == self.turn_id:
                self.turn_id = None
                wire.resolve(_TURN_ENDED, self._ended)

    # ------------------------------------------------------------ helpers

    def _thread(self) -> str:
        if self.thread_id is None:
            raise RuntimeError("codex: no thread yet (start() did not run)")
        return self.thread_id


def _mode(mode: str) -> tuple[str, dict[str, Any], str]:
    try:
        return MODES[mode]
    except KeyError:
        known = ", ".join(MODES)
        raise NotSupported(
            f"codex: no mode {mode!r} (known: {known}; plan mode needs Codex's experimental API)"
        ) from None


def _needed(decision: Decision | None) -> str:
    if decision is None or decision not in APPROVAL_DECISIONS:
        raise NotSupported(f"codex: a permission request is answered with a decision, not {decision!r}")
    return decision


def _permissions_answer(params: Mapping[str, Any], decision: str) -> dict[str, Any]:
    """``item/permissions/requestApproval``: the permissions asked for, for the turn or the session; none to deny."""
    if decision in ("allow", "allow-always"):
        scope = "session" if decision == "allow-always" else "turn"
        return {"permissions": params.get("permissions") or {}, "scope": scope}
    return {"permissions": {}, "scope": "turn"}


def _user_input_answers(params: Mapping[str, Any], answers: dict[str, str]) -> dict[str, Any]:
    """``{questionId: {"answers": [text]}}``; a question is named by its id, its text or its header.

    An answer that names no question is refused (a typo would otherwise answer nothing).
    """
    out: dict[str, Any] = {}
    used: set[str] = set()
    names: list[str] = []
    for q in params.get("questions") or []:
        if not isinstance(q, Mapping):
            continue
        keys = [k for k in (q.get("id"), q.get("question"), q.get("header")) if isinstance(k, str)]
        names.extend(keys[:2])
        for key in keys:
            if key in answers:
                out[str(q.get("id"))] = {"answers": [answers[key]]}
                used.add(key)
                break
    unknown = [key for key in answers if key not in used]
    if unknown:
        raise UsageError(f"codex: no question {unknown[0]!r} here; the questions: {', '.join(map(repr, names))}")
    return out


def _elicitation_answer(
    params: Mapping[str, Any], question_id: str, decision: Decision | None, answers: dict[str, str] | None
) -> dict[str, Any]:
    """An MCP elicitation: ``accept`` with the form's fields, or ``decline`` / ``cancel``."""
    if decision in ("deny", "deny-always"):
        return {"action": "decline", "content": None}
    if decision == "cancel" or answers is None:
        return {"action": "cancel", "content": None}
    schema = params.get("requestedSchema")
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    if isinstance(props, Mapping) and props:
        content = {name: answers[name] for name in props if name in answers}
        if not content and len(props) == 1:  # the one field, answered by the question's id or text
            value = answers.get(question_id, answers.get(str(params.get("message"))))
            if value is not None:
                content = {next(iter(props)): value}
        return {"action": "accept", "content": content}
    return {"action": "accept", "content": dict(answers) or None}
