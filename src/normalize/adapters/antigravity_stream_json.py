"""The `antigravity-stream-json` adapter: Google Antigravity CLI (``agy``) headless stream-json.

``agy --output-format stream-json`` writes NDJSON on stdout; with
``--input-format stream-json`` it reads ``{"event":"user",...}`` lines on stdin,
one turn per line.  The reference is ``protocols/antigravity.md``; the mapping
table is ``adapters/antigravity-stream-json/README.md``.

Facts (agy 1.1.27-1.2.17, from recorded outputs; the kit's captures are
hand-written after them):

* Every line has ``event`` (never ``type``) and its payload under the key of the
  same name: ``{"event":"step_update","step_update":{...}}``.  ``conversation_id``
  sits at the top of ``init`` but inside the ``step_update`` / ``result`` payloads.
* Keys are snake_case, ``state`` / ``status`` UPPERCASE, ``step_type`` lower
  snake_case; tool parameters are PascalCase (``CommandLine``, ``AbsolutePath``,
  ``TargetFile``), except ``search_web``'s ``query``.  Optional fields are
  omitted, not null.
* No line carries a timestamp, a turn id, a message id or a tool-call id.  A
  step is known by ``step_index``, 0-based and counted over the whole
  conversation (it keeps rising across turns and resumes, and skips numbers);
  the ACTIVE and DONE/ERROR lines of one step share it.  So: call ids are
  ``<conversation_id>:<step_index>``, reply ids likewise, and turns are derived.
* ``agent_response.text_delta`` is a fragment (incremental, may split a word),
  never a snapshot; the last fragment may ride on the DONE line, and a short
  reply can come whole on a DONE line with no ACTIVE before it.  A model call
  that only thinks and calls a tool has no ``text_delta`` at all.  Thinking text
  is never sent, only ``thinking_tokens``.
* ``user_input`` (DONE, no text) means the CLI took a stdin line: the prompt is
  never echoed.  Results match prompts in FIFO order (agy echoes no caller id).
* Step ``usage`` is one model call.  ``result.usage``, ``num_turns`` and
  ``duration_seconds`` are cumulative over the conversation (1.2.x census);
  ``result.response`` is this turn's text and may hold text no delta carried
  (1.1.x, after a sub-agent).  ``total_tokens = input + output``, thinking is
  inside output, ``input_tokens`` excludes ``cache_read_tokens``.
* No permission round trip: headless mode soft-denies, the step goes DONE with
  no output (1.2.17) or ERROR ``permission check failed`` (1.2.14), and the
  result lists ``denied_actions: [{action, display_name}]`` with status SUCCESS.
* SIGINT gives ``result`` ``status: "ERROR"``, ``error: "interrupted"`` (not the
  documented ``INTERRUPTED``), ``response: ""``, and usage counting the call it
  cut; the in-flight step never gets its DONE (1.1.28).
* ``subagent`` steps (``tool_name: "invoke_subagent"``) go ACTIVE then DONE
  within a fraction of a second with the same ``subagent_info``; the child's
  steps are not streamed and the step carries no result (1.1.27).
* ``error_message`` steps carry no text: the error's text is ``result.error``.
* 1.2.17's print timeout ends a turn with SUCCESS and all-zero usage.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import ClassVar, Final, Literal

import msgspec
from msgspec import Raw

from normalize import (
    AssistantDelta,
    AssistantMessage,
    Category,
    CommandOutput,
    Completion,
    CompletionUsage,
    ContextUpdated,
    Direction,
    Emit,
    Error,
    ErrorInfo,
    Item,
    Location,
    MalformedMessage,
    MessageAccepted,
    MessageCompleted,
    MessageStarted,
    ModeUpdate,
    OpenCall,
    Passthrough,
    PermissionAuto,
    Problem,
    ProtocolViolation,
    Sample,
    SessionCreated,
    SessionInfo,
    SessionRecord,
    Source,
    Subagent,
    Tokens,
    ToolCall,
    ToolCallRef,
    ToolChangeApplied,
    TurnComplete,
    TurnStart,
    Usage,
    UserMessage,
    tokens_plus,
    tokens_since,
)
from normalize import (
    Warning as WarningBody,
)

from ._antigravity_stream_json_views import (
    _NO_PARAMS,
    _Denied,
    _Init,
    _Line,
    _line_decoder,
    _Params,
    _params_decoder,
    _Step,
    _ToolError,
    _Usage,
)
from ._base import BuiltinAdapter
from ._limits import OPEN_ITEMS, Bounded

__all__ = ["AntigravityStreamJsonAdapter"]

# --------------------------------------------------------------------------
# Tables

#: Tool name -> category.  Tools not listed are "other"; ``browser_*`` too.
_CATEGORIES: Final[dict[str, Category]] = {
    "view_file": "read",
    "list_dir": "read",
    "grep_search": "search",
    "find_by_name": "search",
    "run_command": "execute",
    "command_status": "execute",
    "write_to_file": "edit",
    "replace_file_content": "edit",
    "multi_replace_file_content": "edit",
    "search_web": "web-search",
    "read_url_content": "fetch",
    "call_mcp_tool": "mcp",
    "invoke_subagent": "other",
}

#: ``denied_actions[].action`` -> the tools that action names (1.2.x).
_DENIED_TOOLS: Final[dict[str, tuple[str, ...]]] = {
    "command": ("run_command",),
    "write_file": ("write_to_file", "replace_file_content", "multi_replace_file_content"),
}

#: ``result.status`` -> Completion stop reason (``error: "interrupted"`` is checked first).
_STOP_REASONS: Final[dict[str, Literal["end_turn", "cancelled", "error"]]] = {
    "SUCCESS": "end_turn",
    "CANCELED": "cancelled",
    "INTERRUPTED": "cancelled",
}

#: A step line that gives no event is kept as it is.
_STEP_PASSTHROUGH: Final = Passthrough(method="step_update")

#: The option id of a soft-denied action's PermissionAuto (agy has no options to name one).
DENY_OPTION: Final = "deny"


def _title(tool: str, p: _Params) -> str:
    for value in (p.command_line, p.absolute_path, p.target_file, p.directory_path, p.pattern, p.query, p.url):
        if value:
            return value
    if p.tool_name:
        return f"{p.server_name}/{p.tool_name}" if p.server_name else p.tool_name
    return tool


def _locations(p: _Params) -> list[Location] | None:
    paths = [v for v in (p.absolute_path, p.target_file, p.directory_path, p.search_directory) if v]
    return [Location(path=v) for v in paths] or None


def _tokens(u: _Usage) -> Tokens:
    return Tokens(
        input=u.input_tokens,
        output=u.output_tokens,
        total=u.total_tokens,
        cache_read=u.cache_read_tokens,
        reasoning=u.thinking_tokens,
    )


_NULL: Final = Raw(b"null")
_ZERO: Final = Tokens(input=0, output=0, total=0, cache_read=0, reasoning=0)


def _error_text(err: _ToolError | str | None) -> str | None:
    if err is None or isinstance(err, str):
        return err
    return err.message or err.type


# --------------------------------------------------------------------------
# State


class _Turn:
    """What one turn (one prompt, one ``result``) accumulates: its prompt, whether the CLI took
    it, its first step and its model calls' tokens (a resumed conversation's turn usage),
    whether a reply streamed, and the calls that ended with no output (soft-denied ones look
    so, matched to ``result.denied_actions``).  The core keeps the turn's id and open calls."""

    __slots__ = ("call_tokens", "first_step", "prompt_id", "replied", "taken", "unanswered")

    def __init__(self, prompt_id: str, taken: bool) -> None:
        self.prompt_id = prompt_id
        #: the CLI took the prompt (its ``user_input`` step was seen)
        self.taken = taken
        self.first_step: int | None = None
        self.replied = False  # some text_delta was seen
        #: the turn's model calls' tokens summed (None: no call yet)
        self.call_tokens: Tokens | None = None
        #: calls that ended with no output (DONE without ``output``, or ERROR), by step index
        self.unanswered: list[tuple[int, ToolCallRef]] = []


class _Note:
    """What a step's end needs that the core's entry of its call does not hold (``Emit.note``)."""

    __slots__ = ("input", "step", "subagents", "turn")

    def __init__(self, input: Raw | None, step: int, turn: _Turn | None) -> None:
        self.input = input  # the tool's parameters: a denied call's ``toolCall.input``
        self.step = step
        self.turn = turn  # the turn it started in, which a soft denial of it is matched in
        self.subagents: list[str] = []  # the sub-agents an invoke_subagent step launched


_Handler = Callable[["AntigravityStreamJsonAdapter", _Line], list[Item]]
_StepHandler = Callable[["AntigravityStreamJsonAdapter", _Step, str], list[Item]]


class AntigravityStreamJsonAdapter(BuiltinAdapter):
    protocol = "antigravity-stream-json"
    announces_session = True
    agent = "antigravity"

    _AGENT_EVENTS: ClassVar[dict[str, _Handler]]
    _CLIENT_EVENTS: ClassVar[dict[str, _Handler]]
    _STEPS: ClassVar[dict[str, _StepHandler]]

    def __init__(self) -> None:
        super().__init__()
        self._fed = False
        self._cid = ""
        self._prompts = 0
        #: prompts written on stdin that the CLI has not taken yet: (id, started its turn)
        self._queued: deque[tuple[str, bool]] = deque()
        self._turn: _Turn | None = None
        self._replies: Bounded[int, list[str]] = Bounded("reply at step", OPEN_ITEMS)
        self._subagents: Bounded[str, str] = Bounded("sub-agent", OPEN_ITEMS)  # child conversation -> spawning call
        self._cumulative: Tokens | None = None

    # ---------------------------------------------------------------- contract

    @classmethod
    def detect(cls, sample: Sequence[Sample]) -> float:
        for data, from_ in sample:
            try:
                line = _line_decoder.decode(data)
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
            if from_ == "agent" and (
                (line.event == "init" and line.init is not None)
                or (line.event == "step_update" and line.step_update is not None)
                or (line.event == "result" and line.result is not None)
            ):
                return 0.9
        return 0.0

    def feed(self, message: bytes, from_: Direction = "agent") -> list[Item]:
        self._check_open()
        first = not self._fed
        self._fed = True
        try:
            line = _line_decoder.decode(message)
        except msgspec.ValidationError as exc:
            raise MalformedMessage(f"not an antigravity stream-json line: {exc}") from None
        except msgspec.DecodeError as exc:
            raise MalformedMessage(f"not JSON: {exc}") from None
        table = self._AGENT_EVENTS if from_ == "agent" else self._CLIENT_EVENTS
        event = line.event or ""
        handler = table.get(event)
        if handler is None:
            return [Passthrough(method=line.event)]
        items = handler(self, line)  # a new list each time: the Source goes in front of it
        items.insert(0, _SOURCES[event])
        if first:
            # the record is the first item of the first message; a stream that does
            # not open with ``init`` (a client prompt first, a pre-flight failure)
            # gets what that line knows
            cid = line.conversation_id or (line.result.conversation_id if line.result is not None else "")
            items.insert(0, self._created(cid or None, line.init))
        return items

    def close(self) -> list[Item]:
        self._closed = True
        # calls and sub-agents left open are settled by the core (docs/adapters.md)
        self._subagents.clear()
        return []

    # ------------------------------------------------------------ agent lines

    def _created(self, cid: str | None, init: _Init | None) -> SessionCreated:
        return SessionCreated(
            session_id="",
            record=SessionRecord(
                id="",
                agent="",
                protocol="",
                native_session_id=cid,
                cwd=init.cwd if init else None,
                model=init.model if init else None,
                mode=init.permission_mode if init else None,
            ),
        )

    def _on_init(self, line: _Line) -> list[Item]:
        init = line.init
        if init is None:
            return [Problem(error=ProtocolViolation("an init line without its init payload"))]
        self._cid = line.conversation_id or self._cid
        out: list[Item] = []
        out.append(SessionInfo(cwd=init.cwd, model=init.model))
        if init.permission_mode is not None or init.model is not None:
            out.append(ModeUpdate(mode_id=init.permission_mode, model=init.model))
        if init.tools:
            out.append(ContextUpdated(session_id="", applied=[ToolChangeApplied(added=init.tools)]))
        return out

    def _on_step(self, line: _Line) -> list[Item]:
        step = line.step_update
        if step is None:
            return [Problem(error=ProtocolViolation("a step_update line without its step_update payload"))]
        if step.step_index is None:
            return [Problem(error=ProtocolViolation(f"a {step.step_type or 'step'} step without step_index"))]
        cid = step.conversation_id or self._cid
        self._cid = self._cid or cid
        handler = self._STEPS.get(step.step_type)
        if handler is None:
            return [_STEP_PASSTHROUGH]
        if self._turn is not None and self._turn.first_step is None:
            self._turn.first_step = step.step_index
        return handler(self, step, cid)

    # user_input: the CLI took the next prompt
    def _on_user_input(self, step: _Step, cid: str) -> list[Item]:
        out: list[Item] = []
        queued = self._queued.popleft() if self._queued else None
        turn = self._turn
        if queued is not None and queued[1] and turn is not None and not turn.taken:
            turn.taken = True  # the prompt already opened this turn when it was written
            turn.first_step = step.step_index
        else:
            if queued is not None:
                prompt_id = queued[0]
            else:
                self._prompts += 1
                prompt_id = f"prompt:{self._prompts}"
            self._turn = turn = _Turn(prompt_id, taken=True)
            turn.first_step = step.step_index
            out.append(TurnStart())
            if queued is None:
                # no stdin line was seen: the prompt is never echoed, its text is unknown
                out.append(UserMessage(message_id=prompt_id, text=""))
        out.append(MessageAccepted(session_id="", message_id=turn.prompt_id))
        out.append(MessageStarted(session_id="", message_id=turn.prompt_id))
        return out

    def _on_agent_response(self, step: _Step, cid: str) -> list[Item]:
        idx = step.step_index
        assert idx is not None
        msg_id = f"{cid}:{idx}"
        out: list[Item] = []
        if step.text_delta:
            self._replies.setdefault(idx, []).append(step.text_delta)
            out.append(AssistantDelta(message_id=msg_id, text=step.text_delta))
            if self._turn is not None:
                self._turn.replied = True
        if step.state == "ACTIVE":
            return out or [_STEP_PASSTHROUGH]
        parts = self._replies.pop(idx, None)
        if parts:
            out.append(AssistantMessage(message_id=msg_id, text="".join(parts)))
        if step.usage is not None:
            out.append(self._call_usage(step.usage))
        if step.state == "ERROR":
            text = _error_text(step.error) or "the model call failed"
            out.append(Error(message=text, error_type="agent_response", recoverable=True))
        return out or [_STEP_PASSTHROUGH]

    def _call_usage(self, usage: _Usage) -> Usage:
        tokens = _tokens(usage)
        turn = self._turn
        if turn is not None:
            prev = turn.call_tokens
            turn.call_tokens = tokens if prev is None else tokens_plus(prev, tokens)
        return Usage(tokens=tokens, scope="call")

    def _open_call(self, step: _Step, cid: str, out: list[Item]) -> OpenCall:
        """The call of a tool step: the core's entry, or the one this line starts."""
        idx = step.step_index
        assert idx is not None
        call_id = f"{cid}:{idx}"
        known = self.calls.get(call_id)
        if known is not None:
            if step.state == "ACTIVE":
                out.append(ToolCall(call_id=call_id, tool=known.tool, phase="updated"))
            return known
        info = step.tool_info
        tool = step.tool_name or (info.name if info else None) or step.step_type
        # absent (empty) or null: no input (a field absent is omitted, never written null)
        raw = info.parameters if info is not None and info.parameters and info.parameters != _NULL else None
        try:
            params = _params_decoder.decode(raw) if raw is not None else _NO_PARAMS
        except (msgspec.DecodeError, msgspec.ValidationError):
            params = _NO_PARAMS
        title = _title(tool, params)
        if step.subagent_info is not None and step.subagent_info.subagents:
            first = step.subagent_info.subagents[0]
            title = first.role or first.type_name or title
        started = ToolCall(
            call_id=call_id,
            tool=tool,
            phase="started",
            title=title,
            category=_CATEGORIES.get(tool, "other"),
            locations=_locations(params),
            input=raw,
        )
        note = _Note(raw, idx, self._turn)
        out.append(Emit(body=started, note=note))
        # the core records it once this message is processed: until then, as it will
        return OpenCall(started, None, None, note)

    def _end_call(self, step: _Step, call: OpenCall, out: list[Item]) -> None:
        info = step.tool_info
        output = info.output if info else None
        if step.state == "DONE":
            if output is not None and call.tool == "run_command":
                out.append(CommandOutput(call_id=call.call_id, stream="merged", delta=output))
            # named by its id only: the core repeats the tool, title and category of its start
            out.append(ToolCall(call_id=call.call_id, tool="", phase="completed", output=output))
            if output is None:
                self._unanswered(call)
        else:  # ERROR
            text = _error_text(info.error if info else None) or _error_text(step.error)
            out.append(ToolCall(call_id=call.call_id, tool="", phase="failed", output=text))
            self._unanswered(call)

    @staticmethod
    def _unanswered(call: OpenCall) -> None:
        """A call ended with no output: how a soft-denied call looks, kept for its turn's result."""
        note: _Note = call.note
        if note.turn is not None:
            ref = ToolCallRef(
                call_id=call.call_id,
                tool=call.tool,
                title=call.title or call.tool,
                input=note.input,
                category=call.category,
            )
            note.turn.unanswered.append((note.step, ref))

    def _on_tool(self, step: _Step, cid: str) -> list[Item]:
        out: list[Item] = []
        call = self._open_call(step, cid, out)
        if step.state in ("DONE", "ERROR"):
            self._end_call(step, call, out)
        return out or [_STEP_PASSTHROUGH]

    def _on_subagent(self, step: _Step, cid: str) -> list[Item]:
        out: list[Item] = []
        new = f"{cid}:{step.step_index}" not in self.calls
        call = self._open_call(step, cid, out)
        note: _Note = call.note
        if new and step.subagent_info is not None:
            for entry in step.subagent_info.subagents:
                child = entry.conversation_id or f"{call.call_id}:{len(note.subagents)}"
                note.subagents.append(child)
                self._subagents[child] = call.call_id
                out.append(
                    Subagent(
                        subagent_id=child,
                        phase="started",
                        name=entry.type_name,
                        description=entry.role,
                        prompt=entry.initial_prompt,
                        call_id=call.call_id,
                    )
                )
        if step.state in ("DONE", "ERROR"):
            failed = step.state == "ERROR"
            self._end_call(step, call, out)
            for child in note.subagents:
                if failed:
                    self._subagents.pop(child, None)
                    out.append(Subagent(subagent_id=child, phase="failed", call_id=call.call_id))
                else:
                    # launched: the child works on; the turn's result says it is over
                    out.append(Subagent(subagent_id=child, phase="progress", activity="launched", call_id=call.call_id))
        return out

    def _on_checkpoint(self, step: _Step, cid: str) -> list[Item]:
        if step.usage is not None:
            return [self._call_usage(step.usage)]
        return [_STEP_PASSTHROUGH]

    def _on_error_message(self, step: _Step, cid: str) -> list[Item]:
        text = (
            _error_text(step.error)
            or f"agy reported an error at step {step.step_index} (its text comes with the result)"
        )
        return [Error(message=text, error_type="error_message", recoverable=True)]

    def _on_untranslated(self, step: _Step, cid: str) -> list[Item]:
        return [_STEP_PASSTHROUGH]

    # result: the end of one turn
    def _on_result(self, line: _Line) -> list[Item]:
        res = line.result
        if res is None:
            return [Problem(error=ProtocolViolation("a result line without its result payload"))]
        cid = res.conversation_id or self._cid
        self._cid = self._cid or cid
        turn = self._turn
        if turn is not None and not turn.taken and self._queued and self._queued[0][0] == turn.prompt_id:
            self._queued.popleft()  # the prompt opened the turn but the CLI failed before taking it
        if turn is None:
            # a result with no user_input: a pre-flight failure, or a prompt the CLI never took
            queued = self._queued.popleft() if self._queued else None
            if queued is None:
                self._prompts += 1
                queued = (f"prompt:{self._prompts}", False)
            turn = _Turn(queued[0], taken=False)
        self._turn = None
        interrupted = res.status != "SUCCESS" and res.error == "interrupted"
        out: list[Item] = []
        # replies still streaming: the turn is over, so their text is final
        for idx, parts in self._replies.items():
            out.append(AssistantMessage(message_id=f"{cid}:{idx}", text="".join(parts)))
        self._replies.clear()
        if not turn.replied and res.response:
            # text that no delta carried (agy's fallback): the turn's reply
            out.append(AssistantMessage(message_id=f"{cid}:result:{res.num_turns or 0}", text=res.response))
        for call in self.calls:  # the steps that never ended: failed here, not left to the core
            out.append(ToolCall(call_id=call.call_id, tool="", phase="failed", output="the turn ended first"))
            self._unanswered(call)
        subagent_phase: Literal["completed", "failed", "cancelled"] = (
            "completed" if res.status == "SUCCESS" else "cancelled" if interrupted else "failed"
        )
        for child, call_id in self._subagents.items():
            out.append(Subagent(subagent_id=child, phase=subagent_phase, call_id=call_id))
        self._subagents.clear()
        for i, denied in enumerate(res.denied_actions or ()):
            out.append(PermissionAuto(tool_call=self._denied_call(turn, denied, cid, i), option_id=DENY_OPTION))
        timed_out = res.status == "SUCCESS" and res.usage is not None and _tokens(res.usage) == _ZERO
        if timed_out:
            out.append(
                WarningBody(
                    message="the turn ended with all-zero usage: agy's print timeout cut it short", source="normalize"
                )
            )
        if res.error and not interrupted:
            out.append(Error(message=res.error, error_type="result", recoverable=res.status == "SUCCESS"))
        usage = None
        if res.usage is not None:
            total = _tokens(res.usage)
            usage = self._turn_tokens(turn, total)
            out.append(Usage(tokens=usage, scope="turn"))
            out.append(Usage(tokens=total, scope="session"))
            self._cumulative = total
        ok = res.status == "SUCCESS" and not timed_out
        out.append(TurnComplete(reason="ok" if ok else "interrupt", stop_reason=res.status or None))
        if interrupted:
            stop: Literal["end_turn", "cancelled", "error"] = "cancelled"
        elif timed_out:
            stop = "error"
        else:
            stop = _STOP_REASONS.get(res.status, "error")
        error = None
        if res.error and not interrupted:
            error = ErrorInfo(message=res.error, error_type="result")
        elif timed_out:
            error = ErrorInfo(message="print timeout", error_type="timeout")
        out.append(
            MessageCompleted(
                session_id="",
                message_id=turn.prompt_id,
                result=Completion(
                    stop_reason=stop,
                    text=res.response or None,
                    usage=CompletionUsage(tokens=usage) if usage is not None else None,
                    error=error,
                ),
            )
        )
        return out

    def _turn_tokens(self, turn: _Turn, total: Tokens) -> Tokens:
        if self._cumulative is not None:
            return tokens_since(total, self._cumulative)
        if not turn.first_step:
            return total  # the conversation's first turn: everything so far is this turn's
        # a resumed conversation: earlier turns are counted in ``total`` but were never seen
        return turn.call_tokens or _ZERO

    def _denied_call(self, turn: _Turn, denied: _Denied, cid: str, i: int) -> ToolCallRef:
        tools = _DENIED_TOOLS.get(denied.action, ())
        # the latest call of that tool the turn started and that ended with no output
        candidates = turn.unanswered
        for n in sorted(range(len(candidates)), key=lambda n: candidates[n][0], reverse=True):
            ref = candidates[n][1]
            if ref.tool in tools:
                del candidates[n]
                return ref
        tool = tools[0] if tools else denied.action
        title = denied.display_name or denied.action
        return ToolCallRef(call_id=f"{cid}:denied:{i}", tool=tool, title=title, category=_CATEGORIES.get(tool))

    # ----------------------------------------------------------- client lines

    def _on_user(self, line: _Line) -> list[Item]:
        msg = line.message
        if msg is None:
            return [Problem(error=ProtocolViolation("a user line without its message"))]
        content = msg.content
        if isinstance(content, str):
            text = content
        else:
            text = "".join(b.text or "" for b in content if b.type == "text")
        self._prompts += 1
        prompt_id = f"prompt:{self._prompts}"
        out: list[Item] = []
        busy = self._turn is not None or bool(self._queued)
        if not busy:
            # the prompt opens its turn now; the CLI's user_input step will say it took it
            self._turn = _Turn(prompt_id, taken=False)
            out.append(TurnStart())
        self._queued.append((prompt_id, not busy))
        out.append(UserMessage(message_id=prompt_id, text=text, queued=busy or None))
        return out


AntigravityStreamJsonAdapter._AGENT_EVENTS = {
    "init": AntigravityStreamJsonAdapter._on_init,
    "step_update": AntigravityStreamJsonAdapter._on_step,
    "result": AntigravityStreamJsonAdapter._on_result,
}
AntigravityStreamJsonAdapter._CLIENT_EVENTS = {
    "user": AntigravityStreamJsonAdapter._on_user,
}
AntigravityStreamJsonAdapter._STEPS = {
    "user_input": AntigravityStreamJsonAdapter._on_user_input,
    "agent_response": AntigravityStreamJsonAdapter._on_agent_response,
    "tool": AntigravityStreamJsonAdapter._on_tool,
    "subagent": AntigravityStreamJsonAdapter._on_subagent,
    "checkpoint": AntigravityStreamJsonAdapter._on_checkpoint,
    "error_message": AntigravityStreamJsonAdapter._on_error_message,
    "system_message": AntigravityStreamJsonAdapter._on_untranslated,
    "unknown": AntigravityStreamJsonAdapter._on_untranslated,
}
#: The Source of each handled line (frozen, so one per event name serves every line).
_SOURCES: Final = {
    event: Source(method=event)
    for event in (*AntigravityStreamJsonAdapter._AGENT_EVENTS, *AntigravityStreamJsonAdapter._CLIENT_EVENTS)
}
