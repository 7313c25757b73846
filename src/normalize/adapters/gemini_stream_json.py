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
* An API error ends the turn with ``result`` ``status: error`` (exit code 144 after
  HTTP 400); nothing else is written about it.

Older releases (captures gemini-cli-0.38.2, 0.31.0, 0.25.0, 0.20.0, 0.11.3; adapters/gemini-stream-json/README.md):

* Tool ids are ``<tool>_<epoch ms>_<n>`` (0.31, 0.38) or ``<tool>-<epoch ms>-<hex>`` (0.25, 0.20, 0.11).
* A refused call: 0.20's policy denial is ``error.type: unhandled_exception``, ``Tool
  execution for "Shell" denied by policy.``; 0.11 has no policies, its ``tools.exclude``
  refuses a command as ``invalid_tool_params``, ``Command '...' is blocked by
  configuration``.  Both give ``permission-auto`` as ``policy_violation`` does.
* ``result.stats`` of 0.20 and 0.11 has ``total_tokens``, ``input_tokens`` and
  ``output_tokens`` only: no ``cached`` (usage then has no ``cacheRead``, not a zero).
* 0.11 ends a turn whose request failed (HTTP 400) with ``result`` ``status: success``
  and exit code 0: the stream says nothing of the error, and it is read as it says.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

import msgspec

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

from ._base import BuiltinAdapter
from ._gemini_stream_json_views import (
    _decoder,
    _ErrorInfo,
    _head_decoder,
    _Line,
)

__all__ = ["GeminiStreamJsonAdapter"]


#: frozen and empty: one serves every line
_IN_TURN: Final = InTurn()

LINE_TYPES: Final = frozenset({"init", "message", "tool_use", "tool_result", "error", "result"})


def _refused(error: _ErrorInfo) -> bool:
    """Whether a failed call was refused by the user's rules: a decision made without asking.

    0.38 on say it by the type, ``policy_violation``; 0.20 ends a call a policy rule denies
    as ``unhandled_exception``, 0.11 (no policies) one ``tools.exclude`` names as
    ``invalid_tool_params``, each in the words :func:`~._gemini_common.refused_by_rule` knows.
    """
    kind = error.type
    if kind == "policy_violation":
        return True
    return kind in ("unhandled_exception", "invalid_tool_params") and gc.refused_by_rule(error.message)


class GeminiStreamJsonAdapter(BuiltinAdapter):
    protocol = "gemini-stream-json"
    agent = "gemini-cli"
    announces_session = True

    def __init__(self) -> None:
        super().__init__()
        #: the assistant message streaming now: its id and text so far
        self._message: tuple[str, str] | None = None
        self._messages = 0  # message ids: the stream gives none
        #: each handler appends the line's items to the list it is given (its Source first)
        self._lines: dict[str, Callable[[_Line, list[Item]], None]] = {
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
        out: list[Item] = [Source(method=line.type, ts=line.timestamp)]
        handler(line, out)
        return out

    def close(self) -> list[Item]:
        self._closed = True
        return []  # calls left open are settled by the core (docs/adapters.md)

    # ------------------------------------------------------------ line types

    def _init(self, line: _Line, out: list[Item]) -> None:
        record = SessionRecord(id="", agent="", protocol="", native_session_id=line.session_id, model=line.model)
        out.insert(0, SessionCreated(session_id="", record=record))  # the record comes before the Source

    def _end_message(self, out: list[Item]) -> None:
        if self._message is not None:
            message_id, text = self._message
            self._message = None
            out.append(AssistantMessage(message_id=message_id, text=text))

    def _msg(self, line: _Line, out: list[Item]) -> None:
        text = line.content or ""
        if line.role == "user":
            self._end_message(out)
            out.append(_IN_TURN)
            self._messages += 1
            out.append(UserMessage(message_id=f"user-{self._messages}", text=text))
            return
        if line.role != "assistant":
            out.append(Passthrough(method=f"message:{line.role}"))
            return
        out.append(_IN_TURN)
        if self._message is None:
            self._messages += 1
            self._message = (f"msg-{self._messages}", "")
        message_id, so_far = self._message
        if not line.delta:  # a whole message
            self._message = None
            out.append(AssistantMessage(message_id=message_id, text=so_far + text))
            return
        self._message = (message_id, so_far + text)
        out.append(AssistantDelta(message_id=message_id, text=text))

    def _tool_use(self, line: _Line, out: list[Item]) -> None:
        tool, call_id = line.tool_name or "", line.tool_id or ""
        self._end_message(out)
        out.append(_IN_TURN)
        started = ToolCall(
            call_id=call_id,
            tool=tool,
            phase="started",
            title=gc.title_of(tool, line.parameters),
            category=gc.category_of(tool),
            input=line.parameters,
        )
        out.append(started)

    def _tool_result(self, line: _Line, out: list[Item]) -> None:
        call_id = line.tool_id or ""
        known = self.calls.get(call_id)  # the result names only its call
        tool = known.tool if known is not None else "unknown"
        failed = line.status != "success"
        if tool == gc.SHELL_TOOL and not failed and line.output:
            out.append(CommandOutput(call_id=call_id, stream="merged", delta=line.output))
        output: Any = line.output
        if failed and line.error is not None:
            output = {"error": line.error.message, "type": line.error.type}
        if failed and line.error is not None and _refused(line.error):
            # a policy rule refused the call without asking: decided, not failed on its own
            title = (known.title if known is not None else None) or tool
            category = known.category if known is not None else None
            ref = ToolCallRef(call_id=call_id, tool=tool, title=title, category=category)
            out.append(PermissionAuto(tool_call=ref, option_id="deny", reason=line.error.message))
        # named by its id only: the core repeats the tool, title and category of its start
        out.append(ToolCall(call_id=call_id, tool="", phase="failed" if failed else "completed", output=output))

    def _error(self, line: _Line, out: list[Item]) -> None:
        message = line.message or ""
        if line.severity == "error":
            out.append(Error(message=message, error_type="agent", recoverable=True))
        else:
            out.append(WarningBody(message=message, source="gemini-cli"))

    def _result(self, line: _Line, out: list[Item]) -> None:
        self._end_message(out)
        out.append(_IN_TURN)
        if line.stats is not None:
            s = line.stats
            tokens = gc.tokens(input=s.input_tokens, output=s.output_tokens, cached=s.cached, total=s.total_tokens)
            out.append(Usage(tokens=tokens, scope="turn"))  # one process is one turn
        if line.status == "success":
            out.append(TurnComplete(reason="ok", stop_reason="success"))
            return
        err = line.error or _ErrorInfo()
        out.append(Error(message=err.message, error_type=err.type or "api", recoverable=False))
        out.append(TurnComplete(reason="interrupt", stop_reason=line.status))
