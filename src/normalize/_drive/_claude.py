"""Claude Code driven over stream-json: ``claude -p`` with the control protocol on stdin and stdout.

The CLI runs as ``claude -p --input-format stream-json --output-format stream-json --verbose
--permission-prompt-tool stdio``: prompts are ``user`` lines on stdin, and the host speaks
the control protocol beside them (``control_request`` / ``control_response``, matched by
``request_id``; shared/protocols/claude.md, section 9):

* ``initialize`` first; its answer says which credentials the CLI found, so a CLI that has
  none (no API key, no login) raises :class:`AuthenticationRequired` at start instead of
  failing at the first prompt;
* ``can_use_tool`` requests of the CLI are the ``permission-request`` (and, for
  ``AskUserQuestion``, ``user-question``) events a host answers with ``respond``;
* ``interrupt`` cancels the running turn; ``set_permission_mode`` and ``set_model`` change
  the session's mode and model.

Claude Code queues a prompt written while a turn runs and answers it as a turn of its own
once the running turn's ``result`` is out, so prompts are never refused here.
"""

from __future__ import annotations

import uuid
from typing import Any, ClassVar

from .._errors import UsageError
from .._model import Decision, EventEnvelope, PermissionRequest, UserQuestion
from ._core import AgentRequestFailed, AuthenticationRequired, Backend, ImageData, Wire

__all__ = ["ClaudeBackend"]

#: Seconds a control request may wait for its answer (``initialize`` loads settings, plugins, MCP servers).
CONTROL_TIMEOUT = 60.0
#: What a denied call tells the model (the CLI puts it in the tool result).
DENIED = "The user denied this tool call."
#: Suggestion types kept by allow-always: rules and directories.  A ``setMode`` suggestion would
#: change the permission mode of the whole session (``acceptEdits``): that is ``set_mode``'s job.
_KEPT_SUGGESTIONS = frozenset({"addRules", "replaceRules", "addDirectories"})


class ClaudeBackend(Backend):
    """Claude Code (``claude``), spoken to in stream-json with the control protocol."""

    name: ClassVar[str] = "claude"
    protocol: ClassVar[str] = "claude-stream-json"
    program: ClassVar[str] = "claude"
    queues_prompts: ClassVar[bool] = True

    def flags(self) -> list[str]:
        o = self.options
        flags = [
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-prompt-tool",
            "stdio",
        ]
        if o.model:
            flags += ["--model", o.model]
        if o.mode:
            flags += ["--permission-mode", o.mode]
        if o.resume:
            flags += ["--resume", o.resume]
        return flags

    # ------------------------------------------------------------ control requests

    async def _control(self, wire: Wire, subtype: str, **fields: Any) -> Any:
        """A control request to the CLI; the ``response`` of its success, or :class:`AgentRequestFailed`."""
        request_id = f"req_{wire.next_id()}_{uuid.uuid4().hex[:8]}"
        waiter = wire.expect(("control", request_id))
        try:
            await wire.send(
                {"type": "control_request", "request_id": request_id, "request": {"subtype": subtype, **fields}}
            )
            answer = await waiter.wait(CONTROL_TIMEOUT)
        finally:
            wire.fail(("control", request_id), TimeoutError(subtype))  # drops it if still waiting
        if answer.get("subtype") != "success":
            raise AgentRequestFailed(subtype, None, str(answer.get("error") or "error"), answer.get("error_code"))
        return answer.get("response")

    async def start(self, wire: Wire) -> None:
        init = await self._control(wire, "initialize", hooks=None)
        account = init.get("account") if isinstance(init, dict) else None
        if isinstance(account, dict) and _no_credentials(account):
            raise AuthenticationRequired(
                "claude: no credentials (set ANTHROPIC_API_KEY, or log in with `claude` then /login)"
            )

    async def prompt(self, wire: Wire, text: str, images: list[ImageData]) -> None:
        content: str | list[dict[str, Any]] = text
        if images:
            blocks: list[dict[str, Any]] = [
                {"type": "image", "source": {"type": "base64", "media_type": i.mime_type, "data": i.data}}
                for i in images
            ]
            content = [*blocks, {"type": "text", "text": text}]
        message = {"role": "user", "content": content}
        await wire.send({"type": "user", "message": message, "parent_tool_use_id": None, "session_id": ""})

    async def respond(
        self, wire: Wire, request: EventEnvelope, decision: Decision | None, answers: dict[str, str] | None
    ) -> None:
        native = request.native.data
        request_id = native.get("request_id") if isinstance(native, dict) else None
        asked = native.get("request") if isinstance(native, dict) else None
        if not isinstance(request_id, str) or not isinstance(asked, dict):
            raise UsageError(f"claude: request {request.body} did not come from a can_use_tool request")
        if isinstance(request.body, PermissionRequest) and answers:
            raise UsageError("claude: a permission request takes a decision, not answers")
        given = asked.get("input")
        tool_input: dict[str, Any] = given if isinstance(given, dict) else {}
        response: dict[str, Any]
        if decision == "cancel":
            # an error answer: the CLI refuses the call and goes on; the event says cancelled
            error = {"subtype": "error", "request_id": request_id, "error": "cancelled by the host"}
            await wire.send({"type": "control_response", "response": error})
            return
        if isinstance(request.body, UserQuestion) and decision in (None, "answered", "allow"):
            # the CLI reads the answers from the input it is given back: question text -> answer
            response = {"behavior": "allow", "updatedInput": {**tool_input, "answers": answers or {}}}
        elif isinstance(request.body, PermissionRequest) and decision in ("allow", "allow-always"):
            response = {"behavior": "allow", "updatedInput": tool_input}
            rules = [s for s in asked.get("permission_suggestions") or () if _kept(s)]
            if decision == "allow-always" and rules:
                response["updatedPermissions"] = rules
        elif decision in ("deny", "deny-always"):
            response = {"behavior": "deny", "message": DENIED}
        else:
            raise UsageError(f"claude: no answer for decision {decision!r} to a {request.kind}")
        success = {"subtype": "success", "request_id": request_id, "response": response}
        await wire.send({"type": "control_response", "response": success})

    async def cancel(self, wire: Wire) -> None:
        await self._control(wire, "interrupt")

    async def set_mode(self, wire: Wire, mode: str) -> None:
        await self._control(wire, "set_permission_mode", mode=mode)

    async def set_model(self, wire: Wire, model: str) -> None:
        await self._control(wire, "set_model", model=model)

    async def on_message(self, wire: Wire, msg: Any) -> None:
        if type(msg) is not dict:
            return
        kind = msg.get("type")
        if kind == "control_response":
            response = msg.get("response")
            if isinstance(response, dict):
                wire.resolve(("control", response.get("request_id")), response)
        elif kind == "control_request":
            request = msg.get("request")
            subtype = request.get("subtype") if isinstance(request, dict) else None
            if subtype != "can_use_tool":
                # hooks, SDK MCP servers, elicitations: none is configured, so none is served;
                # an error answer lets the CLI go on instead of waiting for ever
                error = f"normalize.drive does not serve {subtype!r} requests"
                answer = {"subtype": "error", "request_id": msg.get("request_id"), "error": error}
                await wire.send({"type": "control_response", "response": answer})


def _kept(suggestion: Any) -> bool:
    return isinstance(suggestion, dict) and suggestion.get("type") in _KEPT_SUGGESTIONS


def _no_credentials(account: dict[str, Any]) -> bool:
    """Whether ``initialize``'s ``account`` says the CLI has nothing to call Anthropic's API with.

    Claude Code 2.1.332 reports ``apiKeySource`` for an API key (``ANTHROPIC_API_KEY``, a key
    helper) and ``tokenSource`` for a login or token (``none`` when there is none); another
    provider (``apiProvider``: bedrock, vertex, ...) brings its own credentials.
    """
    if account.get("apiProvider", "firstParty") != "firstParty":
        return False
    return not account.get("apiKeySource") and account.get("tokenSource") in (None, "none")
