"""The `gemini-stream-json` adapter: ``gemini -p ... --output-format stream-json``.

Facts (Gemini CLI 0.61.0, captures in adapters/gemini-stream-json/captures/gemini-cli-0.61.0):

* One JSON object per line on stdout, tagged by ``type``, each with an ISO ``timestamp``:
  ``init {session_id, model}`` (``model`` is ``"auto"`` when the router picks one per
  request), ``message {role: user|assistant, content, delta?}``, ``tool_use {tool_name,
  tool_id, parameters}``, ``tool_result {tool_id, status: success|error, output?, error?:
  {type, message}}``, ``error {severity, message}``, ``result {status: success|error,
  error?: {type, message}, stats}``.
* One process is one turn: the prompt is echoed as the ``user`` message, the turn ends
  with ``result``.  A resumed session (``--resume``) starts with a new ``init`` naming the
  same ``session_id``.
* Assistant text comes only as deltas (``delta: true``), without a message id; a
  message ends at the next tool call or at ``result``.  Thoughts are never written.
* Tool ids are ``<tool>__<tool>_<epoch ms>_<n>``, the ids the stored chat uses.  A tool
  refused by a policy rule ends ``status: error`` with ``error.type: policy_violation``; a
  tool the model names but was not offered (shell tools without ``--yolo`` in headless
  runs) ``tool_not_registered``.  The shell output is ``output`` (stdout and stderr
  merged); an edit's result is a sentence, never a diff.
* ``result.stats`` sums the session's model requests so far, router side queries
  included: ``input_tokens`` (with the cached part, also in ``cached``), ``output_tokens``
  (without thoughts; ``total_tokens`` counts them), and the same per model.
* An API error ends the turn with ``result`` ``status: error`` (exit code 244 after
  HTTP 400); nothing else is written about it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import msgspec
from msgspec import Struct

from normalize import Adapter as _Adapter
from normalize import (
    AssistantDelta,
    AssistantMessage,
    CommandOutput,
    Direction,
    Error,
    InTurn,
    Item,
    MalformedMessage,
    Passthrough,
    PermissionAuto,
    Sample,
    SessionCreated,
    SessionRecord,
    Source,
    ToolCall,
    ToolCallRef,
    TurnComplete,
    Usage,
    UserMessage,
)
from normalize import Warning as WarningBody
from normalize.adapters import _gemini_common as gc

__all__ = ["GeminiStreamJsonAdapter"]


class _ErrorInfo(Struct, frozen=True):
    type: str | None = None
    message: str = ""


class _Stats(Struct, frozen=True):
    total_tokens: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached: int | None = None


class _Line(Struct, frozen=True):
    type: str
    timestamp: str | None = None
    session_id: str | None = None
    model: str | None = None
    role: str | None = None
    content: str | None = None
    delta: bool = False
    tool_name: str | None = None
    tool_id: str | None = None
    parameters: Any = None
    status: str | None = None
    output: str | None = None
    error: _ErrorInfo | None = None
    severity: str | None = None
    message: str | None = None
    stats: _Stats | None = None


class _Head(Struct, frozen=True):
    type: str
    timestamp: str | None = None


_decoder = msgspec.json.Decoder(_Line)
_head_decoder = msgspec.json.Decoder(_Head)

LINE_TYPES = frozenset({"init", "message", "tool_use", "tool_result", "error", "result"})


class GeminiStreamJsonAdapter(_Adapter):
    protocol = "gemini-stream-json"
    agent = "gemini-cli"
    announces_session = True

    def __init__(self) -> None:
        super().__init__()
        #: the assistant message streaming now: its id and text so far
        self._message: tuple[str, str] | None = None
        self._messages = 0  # message ids: the stream gives none
        self._lines: dict[str, Callable[[_Line], list[Item]]] = {
            "init": self._init,
            "message": self._msg,
            "tool_use": self._tool_use,
            "tool_result": self._tool_result,
            "error": self._error,
            "result": self._result,
        }

    @classmethod
    def detect(cls, sample: Sequence[Sample]) -> float:
        heads = []
        for data, _from in sample:
            try:
                heads.append(_head_decoder.decode(data))
            except msgspec.DecodeError:
                return 0.0
        if not heads or any(h.type not in LINE_TYPES or h.timestamp is None for h in heads):
            return 0.0
        return 0.95 if heads[0].type == "init" else 0.5

    def feed(self, message: bytes, from_: Direction = "agent") -> list[Item]:
        self._check_open()
        try:
            line = _decoder.decode(message)
        except msgspec.DecodeError as exc:
            raise MalformedMessage(f"not a gemini stream-json line: {exc}") from None
        handler = self._lines.get(line.type)
        if handler is None:
            return [Passthrough(method=line.type)]
        out = handler(line)
        lead = [out.pop(0)] if out and isinstance(out[0], SessionCreated) else []
        return [*lead, Source(method=line.type, ts=line.timestamp), *out]

    def close(self) -> list[Item]:
        self._closed = True
        return []  # calls left open are settled by the core (docs/adapters.md)

    # ------------------------------------------------------------ line types

    def _init(self, line: _Line) -> list[Item]:
        record = SessionRecord(id="", agent="", protocol="", native_session_id=line.session_id, model=line.model)
        return [SessionCreated(session_id="", record=record)]

    def _end_message(self) -> list[Item]:
        if self._message is None:
            return []
        message_id, text = self._message
        self._message = None
        return [AssistantMessage(message_id=message_id, text=text)]

    def _msg(self, line: _Line) -> list[Item]:
        text = line.content or ""
        if line.role == "user":
            out = [*self._end_message(), *[InTurn()]]
            self._messages += 1
            return [*out, UserMessage(message_id=f"user-{self._messages}", text=text)]
        if line.role != "assistant":
            return [Passthrough(method=f"message:{line.role}")]
        out = [InTurn()]
        if self._message is None:
            self._messages += 1
            self._message = (f"msg-{self._messages}", "")
        message_id, so_far = self._message
        if not line.delta:  # a whole message
            self._message = None
            return [*out, AssistantMessage(message_id=message_id, text=so_far + text)]
        self._message = (message_id, so_far + text)
        return [*out, AssistantDelta(message_id=message_id, text=text)]

    def _tool_use(self, line: _Line) -> list[Item]:
        tool, call_id = line.tool_name or "", line.tool_id or ""
        out = [*self._end_message(), *[InTurn()]]
        started = ToolCall(
            call_id=call_id,
            tool=tool,
            phase="started",
            title=gc.title_of(tool, line.parameters),
            category=gc.category_of(tool),
            input=line.parameters,
        )
        return [*out, started]

    def _tool_result(self, line: _Line) -> list[Item]:
        call_id = line.tool_id or ""
        known = self.calls.get(call_id)  # the result names only its call
        tool = known.tool if known is not None else "unknown"
        failed = line.status != "success"
        out: list[Item] = []
        if tool == gc.SHELL_TOOL and not failed and line.output:
            out.append(CommandOutput(call_id=call_id, stream="merged", delta=line.output))
        output: Any = line.output
        if failed and line.error is not None:
            output = {"error": line.error.message, "type": line.error.type}
        if failed and line.error is not None and line.error.type == "policy_violation":
            # a policy rule refused the call without asking: decided, not failed on its own
            title = (known.title if known is not None else None) or tool
            category = known.category if known is not None else None
            ref = ToolCallRef(call_id=call_id, tool=tool, title=title, category=category)
            out.append(PermissionAuto(tool_call=ref, option_id="deny", reason=line.error.message))
        # named by its id only: the core repeats the tool, title and category of its start
        body = ToolCall(call_id=call_id, tool="", phase="failed" if failed else "completed", output=output)
        return [*out, body]

    def _error(self, line: _Line) -> list[Item]:
        message = line.message or ""
        if line.severity == "error":
            return [Error(message=message, error_type="agent", recoverable=True)]
        return [WarningBody(message=message, source="gemini-cli")]

    def _result(self, line: _Line) -> list[Item]:
        out = [*self._end_message(), *[InTurn()]]
        if line.stats is not None:
            s = line.stats
            tokens = gc.tokens(input=s.input_tokens, output=s.output_tokens, cached=s.cached, total=s.total_tokens)
            out.append(Usage(tokens=tokens, scope="turn"))  # one process is one turn
        if line.status == "success":
            return [*out, TurnComplete(reason="ok", stop_reason="success")]
        err = line.error or _ErrorInfo()
        out.append(Error(message=err.message, error_type=err.type or "api", recoverable=False))
        return [*out, TurnComplete(reason="interrupt", stop_reason=line.status)]
