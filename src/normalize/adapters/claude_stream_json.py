"""The ``claude-stream-json`` adapter: Claude Code's ``--output-format stream-json``.

Both directions: the CLI's stdout, and what a client writes to its stdin with
``--input-format stream-json`` (prompts and the control protocol), fed with
``from_="client"``.

Facts (Claude Code 2.1.332 unless said otherwise; docs in adapters/claude-stream-json/):

* Every line is one JSON object with ``type``; ``system`` and ``result`` also have
  ``subtype``.  The ``result`` line's first key is not ``type`` (2.1.220+):
  never sniff the first key.
* ``assistant`` lines hold ONE content block each; the blocks of one API message
  share ``message.id``; each line has ``stop_reason: null`` and
  ``usage.output_tokens: 1`` (useless per line; the ``result`` has the turn's).
* With ``--include-partial-messages``, ``stream_event`` lines carry the raw SSE
  events; the complete ``assistant`` line of block i arrives BEFORE
  ``content_block_stop(i)`` and repeats the streamed text (so it must not be
  emitted twice).  ``input_json_delta`` starts with an empty fragment.
  Sub-agents never produce ``stream_event`` lines (2.1.332).
* Turns have no id.  ``-p``: one turn, ``system/init`` .. ``result``.  stdin
  mode: each client ``user`` line starts a turn and ``system/init`` is repeated
  at the start of every turn; one ``result`` per turn (``result_index`` 0, 1, ..).
  A background agent's completion makes the CLI start a turn by itself (a new
  ``init`` without a prompt); its ``result`` may come after the earlier turn's
  ``result``, and both may come after the new ``init`` (timing dependent).
* ``result.usage`` covers this turn's main-thread API calls only; sub-agents'
  tokens are in ``modelUsage`` (cumulative for the session, restored on
  ``--resume``) and ``model_usage_since_last_result``; ``total_cost_usd`` is
  cumulative.
* API failures end as ``subtype: "success"`` + ``is_error: true``, after a
  synthetic ``assistant`` line (``model: "<synthetic>"``,
  ``is_api_error_message: true``, ``error``; up to 2.0.x neither, only its
  ``API Error: ...`` text); the error subtypes
  (``error_max_turns``, ``error_during_execution``, ...) carry ``errors[]``.
  The ``result`` says ``terminal_reason: "api_error"``; 2.1.142 says
  ``"completed"`` there, and only ``api_error_status`` tells the call failed.
* ``system/api_retry``'s ``retry_delay_ms`` is a float in 2.1.142 (an int in
  2.1.332).
* An interrupt (client ``control_request`` ``interrupt``) leaves the partial
  ``assistant`` line with ``aborted: true``, a ``user`` text line
  ``[Request interrupted by user]``, and ``result/error_during_execution`` with
  ``terminal_reason: "aborted_streaming"``; its ``control_response`` may come
  before or after that ``result``.
* ``user`` tool-result lines carry ``tool_use_result`` (an object, or on error
  the string ``"Error: ..."``) and ``tool_result_meta`` (the permission decision:
  source ``config`` = decided by a mode or rule without asking).
* Sub-agent lines carry ``parent_tool_use_id`` (the spawning ``Agent`` call) and
  ``agent_id`` (= ``task_id`` of the ``system/task_*`` lines); a foreground
  sub-agent's text is not printed unless ``--forward-subagent-text``.  The tool is
  ``Agent`` in ``tool_use`` blocks but ``Task`` in ``init.tools``.  A foreground
  agent's ``task_notification.summary`` is its answer; in 2.1.142 it is the task's
  description, and only the ``Agent`` call's result has the answer.
* ``--replay-user-messages`` echoes each stdin prompt back as a ``user`` line with
  ``isReplay: true`` after that turn's ``init``.
* Control request ids: the client's are its own strings, the CLI's are UUIDs;
  match on ``request_id`` and direction.
* ``--output-format stream-json`` without ``--verbose`` in ``-p`` mode prints
  nothing at all on stdout (exit 1).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Final, Generic, Literal, TypeVar

import msgspec
from msgspec import Raw

from normalize import (
    AccountAvailable,
    AccountExhausted,
    AssistantDelta,
    AssistantMessage,
    Body,
    CommandEntry,
    CommandsUpdate,
    Compaction,
    Completion,
    CompletionUsage,
    ContextApplied,
    ContextUpdated,
    ContextWindow,
    ConversationReset,
    Cost,
    Direction,
    Emit,
    Error,
    ErrorInfo,
    Item,
    MalformedMessage,
    MessageAccepted,
    MessageCompleted,
    MessageStarted,
    ModeUpdate,
    Passthrough,
    PermissionAuto,
    PermissionDetail,
    PermissionOption,
    PermissionRequest,
    Question,
    QuestionOption,
    Reasoning,
    ReasoningDelta,
    RequestResolved,
    Sample,
    SessionCreated,
    SessionInfo,
    SessionRecord,
    Source,
    Subagent,
    Task,
    Tokens,
    ToolCall,
    ToolCallRef,
    ToolChangeApplied,
    TurnComplete,
    TurnStart,
    UserMessage,
    UserQuestion,
)
from normalize import Usage as UsageBody
from normalize import Warning as WarningBody

from ._base import BuiltinAdapter, on_thread
from ._claude_common import (
    ContentBlock,
    block_message_id,
    block_reasoning_id,
    call_finished,
    call_started,
    content_text,
    decode_input,
    decode_tool_result,
    permission_auto,
    present,
    reads_result,
    text_of,
    tokens_of,
    tool_category,
    tool_title,
    total_tokens,
)
from ._claude_common import Usage as UsageView
from ._claude_stream_json_views import (
    _ASK_INPUT,
    _AUTH,
    _BLOCKS,
    _CANCEL,
    _CLIENT_USER,
    _CONV,
    _CREQ,
    _CRESP,
    _HEAD,
    _INIT,
    _INIT_RESP,
    _LINE,
    _PARTIAL_JSON,
    _PROGRESS,
    _RATE,
    _RATE_INFO,
    _RESULT,
    _SERVERS,
    _STREAM,
    _STRINGS,
    _SYSTEM,
    _TAG,
    ASK_TOOL,
    _AssistantLine,
    _AuthStatus,
    _CancelRequest,
    _chosen_option,
    _ClientUser,
    _Content,
    _ControlRequest,
    _ControlResponse,
    _Conversation,
    _ConversationLine,
    _Delta,
    _Head,
    _Init,
    _InitResponse,
    _Line,
    _McpServer,
    _ModelUsage,
    _RateLimit,
    _Request,
    _Result,
    _ResultLine,
    _StreamEvent,
    _StreamLine,
    _System,
    _SystemLine,
    _ToolProgress,
    _UserLine,
)
from ._limits import OPEN_ITEMS, PARTIAL_INPUT, PENDING_REQUESTS, Bounded, Recent

__all__ = ["ClaudeStreamJsonAdapter"]

# --------------------------------------------------------------------------
# Methods


class _Method:
    """A line method's name, and the items every line of it without a timestamp of its own
    (most lines) shares: Source and Passthrough are frozen, so one object serves them all."""

    __slots__ = ("name", "passthrough", "source")

    def __init__(self, name: str) -> None:
        self.name = name
        self.source = Source(method=name)
        self.passthrough = Passthrough(method=name)


#: per line view, the methods seen so far, by subtype; a stream may name any number of
#: subtypes, so only the first few of each view are kept
_METHODS: Final[dict[type, dict[str | None, _Method]]] = {cls: {} for cls in _TAG}
_KEPT_METHODS: Final = 64


def _method(cls: type, sub: str | None) -> _Method:
    methods = _METHODS[cls]
    m = methods.get(sub)
    if m is None:
        tag = _TAG[cls]
        m = _Method(f"{tag}/{sub}" if sub else tag)
        if len(methods) < _KEPT_METHODS:
            methods[sub] = m
    return m


#: documented line types this adapter reads (used by :meth:`detect`)
_KNOWN_TYPES: Final = frozenset(
    {
        "system",
        "assistant",
        "user",
        "result",
        "stream_event",
        "control_request",
        "control_response",
        "control_cancel_request",
        "rate_limit_event",
        "tool_progress",
        "keep_alive",
    }
)


def _content(raw: Raw) -> _Content:
    """A raw ``message.content`` decoded as a line's view decodes it (None when absent or null)."""
    return _decode(_BLOCKS, raw) if present(raw) is not None else None


def _decode(dec: msgspec.json.Decoder[Any], message: bytes | Raw) -> Any:
    try:
        return dec.decode(message)
    except msgspec.DecodeError as exc:  # ValidationError is a DecodeError
        kept = bytes(message)[:1024].decode("utf-8", "replace")  # a Raw has no slicing
        raise MalformedMessage(f"claude-stream-json: {exc}", kept=kept) from None


# --------------------------------------------------------------------------
# State

T = TypeVar("T")


class _Reread(Exception):
    """A line the union's view read, but not one of its raw parts: read the line as before
    (head first), for the same error."""


class _Repeated(Generic[T]):
    """A list every ``init`` repeats: decoded only when its bytes differ from the last one's.

    Each init carries the whole tool list, servers and slash commands, most often the
    same as the last init's; comparing the bytes costs less than decoding them."""

    __slots__ = ("_decoder", "_last")

    def __init__(self, decoder: msgspec.json.Decoder[T]) -> None:
        self._decoder = decoder
        self._last: tuple[Raw, T] | None = None  # the last bytes read, and their value

    def read(self, raw: Raw) -> T:
        last = self._last
        if last is not None and raw == last[0]:
            return last[1]
        try:
            value = self._decoder.decode(raw)
        except msgspec.ValidationError:
            raise _Reread from None
        # a copy: the Raw is a view of the whole line, which it would keep alive
        self._last = (Raw(bytes(raw)), value)
        return value


class _Block:
    """A content block being streamed."""

    __slots__ = ("call_id", "final", "json", "kind", "size", "tool")

    def __init__(self, kind: str, call_id: str | None = None, tool: str | None = None) -> None:
        self.kind = kind
        self.call_id = call_id
        self.tool = tool
        self.json: list[str] = []
        self.size = 0  # characters of input streamed so far
        self.final = False


class _Thread:
    """The API message currently arriving on one thread (main, or one sub-agent)."""

    __slots__ = ("blocks", "first_text", "msg_id", "next_index", "start_usage")

    def __init__(self, msg_id: str) -> None:
        self.restart(msg_id)

    def restart(self, msg_id: str) -> None:
        """The thread's next API message."""
        self.msg_id = msg_id
        self.next_index = 0
        self.first_text: int | None = None
        self.blocks: dict[int, _Block] = {}
        self.start_usage: UsageView | None = None  # what its message_start counted

    def text_id(self, index: int) -> str:
        if self.first_text is None:
            self.first_text = index
        return block_message_id(self.msg_id, index, self.first_text)


def _with_start_input(delta: UsageView, start: UsageView | None) -> UsageView:
    """A ``message_delta``'s usage, with the input counts of its ``message_start`` when it gives
    none: the API's delta may count only ``output_tokens`` (the input is said once, at the
    start), and a call does not read nothing."""
    if start is None or (
        delta.input_tokens is not None
        or delta.cache_read_input_tokens is not None
        or delta.cache_creation_input_tokens is not None
    ):
        return delta
    return msgspec.structs.replace(
        start, output_tokens=delta.output_tokens, output_tokens_details=delta.output_tokens_details
    )


_SUBAGENT_PHASE: Final[dict[str, Literal["progress", "completed", "failed", "cancelled"]]] = {
    "pending": "progress",
    "running": "progress",
    "paused": "progress",
    "completed": "completed",
    "failed": "failed",
    "killed": "cancelled",
    "stopped": "cancelled",
}
_TASK_KIND: Final[dict[str, Literal["shell", "agent", "workflow", "monitor", "subagent", "collab"]]] = {
    "local_bash": "shell",
    "local_workflow": "workflow",
    "in_process_teammate": "collab",
    "monitor": "monitor",
}
_HOOK_PHASE: Final[dict[str, Literal["completed", "failed", "cancelled"]]] = {
    "success": "completed",
    "error": "failed",
    "cancelled": "cancelled",
}
_STOP_REASONS: Final[dict[str, Literal["max_tokens", "refusal"]]] = {"max_tokens": "max_tokens", "refusal": "refusal"}

_OPTIONS: Final = [
    PermissionOption(id="allow", kind="allow_once", label="Allow"),
    PermissionOption(id="deny", kind="reject_once", label="Deny"),
]
_OPTIONS_WITH_RULES: Final = [
    PermissionOption(id="allow", kind="allow_once", label="Allow"),
    PermissionOption(id="allow_always", kind="allow_always", label="Allow and apply the suggested rules"),
    PermissionOption(id="deny", kind="reject_once", label="Deny"),
]


class ClaudeStreamJsonAdapter(BuiltinAdapter):
    """Claude Code ``--output-format stream-json`` (and ``--input-format stream-json``)."""

    protocol = "claude-stream-json"
    announces_session = True
    agent = "claude-code"

    def __init__(self) -> None:
        super().__init__()
        self._agent_handlers: dict[str, Callable[[bytes], list[Item]]] = {
            "system": self._system,
            "assistant": self._assistant,
            "user": self._user,
            "stream_event": self._stream_event,
            "result": self._result,
            "control_request": self._agent_request,
            "control_response": self._agent_response,
            "control_cancel_request": self._cancel,
            "rate_limit_event": self._rate_limit,
            "tool_progress": self._tool_progress,
            "conversation_reset": self._conversation_reset,
            "auth_status": self._auth_status,
        }
        self._line_handlers: dict[type, Callable[[Any], list[Item]]] = {
            _AssistantLine: self._assistant_line,
            _UserLine: self._user_line,
            _StreamLine: self._on_stream_event,
            _ResultLine: self._on_result,
            _SystemLine: self._on_system,
        }
        self._client_handlers: dict[str, Callable[[bytes], list[Item]]] = {
            "user": self._client_user,
            "control_request": self._client_request,
            "control_response": self._client_response,
        }
        self._system_handlers: dict[str, Callable[[_System], list[Item]]] = {
            "status": self._status,
            "api_retry": self._api_retry,
            "compact_boundary": self._compact_boundary,
            "hook_started": self._hook_started,
            "hook_progress": self._hook_progress,
            "hook_response": self._hook_response,
            "task_started": self._task_started,
            "task_progress": self._task_progress,
            "task_updated": self._task_updated,
            "task_notification": self._task_notification,
            "permission_denied": self._permission_denied,
            "local_command_output": self._local_command_output,
            "informational": self._informational,
        }
        # session
        self._created = False
        self._native_session: str | None = None
        self._reset_pending = False
        self._mode: str | None = None
        self._model: str | None = None
        self._context_used: int | None = None  # the last main-thread call's tokens (usage.context)
        self._exhausted = False  # a rate limit rejected the account and has not lifted
        self._questions: Recent = Recent(PENDING_REQUESTS)  # can_use_tool requests that are AskUserQuestion
        self._tools: list[str] = []
        self._mcp: dict[str, str | None] = {}
        self._commands: list[str] | None = None
        self._init_tools = _Repeated(_STRINGS)
        self._init_servers = _Repeated(_SERVERS)
        self._init_commands = _Repeated(_STRINGS)
        # turns
        self._in_turn = False
        self._turn_inited = False
        self._turn_msg = ""
        self._held: str | None = None  # the prompt id of a turn whose init came before the open turn ended
        self._prompts = 0
        self._queued: deque[str] = deque()
        self._unechoed: deque[str] = deque(maxlen=16)
        self._interrupted = False
        # content
        self._threads: Bounded[str | None, _Thread] = Bounded("sub-agent thread", OPEN_ITEMS)
        self._auto_decided: Recent = Recent()
        # sub-agents and tasks
        self._task_call: Bounded[str, str] = Bounded("sub-agent task", OPEN_ITEMS)  # task_id -> spawning call id
        self._subagent_done: Recent = Recent()
        self._compactions = 0
        self._compacting: str | None = None
        # control protocol
        # can_use_tool request id -> (subagent id, the call it asks for)
        self._asked: Bounded[str, tuple[str | None, str | None]] = Bounded("control request", PENDING_REQUESTS)
        # calls the client denied: they never ran (before 2.1, no tool_result_meta says so)
        self._denied: Recent = Recent(PENDING_REQUESTS)
        # calls a can_use_tool request was tied to, until they end: asked about once each
        self._asked_calls: Recent = Recent(PENDING_REQUESTS)
        self._client_requests: Bounded[str, _Request] = Bounded("client control request", PENDING_REQUESTS)
        self._head = _Head()  # the head of the line being read

    # ------------------------------------------------------------------ detect

    @classmethod
    def detect(cls, sample: Sequence[Sample]) -> float:
        hits = 0
        for data, _ in sample:
            try:
                head = _HEAD.decode(data)
            except msgspec.DecodeError:
                continue
            if head.type not in _KNOWN_TYPES:
                continue
            # the stored transcript uses camelCase (sessionId, parentUuid); stdout is snake_case
            if b'"session_id"' in data or head.type.startswith("control_") or b'"parent_tool_use_id"' in data:
                hits += 1
        if not hits:
            return 0.0
        return 0.9 if hits >= min(2, len(sample)) else 0.6

    # -------------------------------------------------------------------- feed

    def feed(self, message: bytes, from_: Direction = "agent") -> list[Item]:
        self._check_open()
        if from_ == "agent":
            try:
                line: _Line = _LINE.decode(message)
            except msgspec.DecodeError:
                pass  # malformed, or another type: read as before, for the same error
            else:
                sub = line.subtype
                if sub is None:  # as _Head.method
                    if line.event is not None:
                        sub = line.event.type
                    if sub is None and line.request is not None:
                        sub = line.request.subtype
                # "" is a default here where the head has None (no subtype, or an event without
                # type): the head reads the method of such a line
                if sub != "" or (line.event is None and line.request is None):
                    cls = type(line)
                    m = _METHODS[cls].get(sub) or _method(cls, sub)  # a call only for a method not yet seen
                    try:
                        items = self._line_handlers[cls](line)
                    except _Reread:
                        return self._reread(message, from_)
                    if not items:
                        return [m.passthrough]
                    ts = line.timestamp
                    source = m.source if ts is None else Source(method=m.name, ts=ts)
                    # a SessionCreated must be the first item of the message that carries it
                    # (the handlers' lists are their own: inserting in place spares a copy)
                    items.insert(1 if type(items[0]) is SessionCreated else 0, source)  # (made here: never a subclass)
                    return items
        return self._reread(message, from_)

    def _reread(self, message: bytes, from_: Direction) -> list[Item]:
        """A line read head first, then with its type's own view."""
        head: _Head = _decode(_HEAD, message)
        self._head = head  # the line's head, for a handler that reads it too (read once per line)
        method = head.method
        handlers = self._client_handlers if from_ == "client" else self._agent_handlers
        handler = handlers.get(head.type or "")
        if handler is None:
            return [Passthrough(method=method)]
        items = handler(message)
        if not items:
            return [Passthrough(method=method)]
        # a SessionCreated must be the first item of the message that carries it
        lead = 1 if isinstance(items[0], SessionCreated) else 0
        return [*items[:lead], Source(method=method, ts=head.timestamp), *items[lead:]]

    def close(self) -> list[Item]:
        self._closed = True
        return []  # calls left open are settled by the core (docs/adapters.md)

    # ------------------------------------------------------------ session/turns

    def _session(self, session_id: str | None, init: _Init | _SystemLine | None = None) -> list[Item]:
        """SessionCreated the first time a session id is seen; conversation-reset when it changes."""
        if not session_id:
            return []
        if not self._created:
            self._created = True
            self._native_session = session_id
            rec = SessionRecord(
                id="",
                agent="",
                protocol="",
                native_session_id=session_id,
                cwd=init.cwd if init else None,
                model=init.model if init else None,
                mode=init.permission_mode if init else None,
                agent_version=init.claude_code_version if init else None,
            )
            return [SessionCreated(session_id="", record=rec)]
        if session_id != self._native_session:
            previous = self._native_session or ""
            self._native_session = session_id
            trigger = "clear" if self._reset_pending else None
            self._reset_pending = False
            return [ConversationReset(agent_session_id=session_id, previous_agent_session_id=previous, trigger=trigger)]
        return []

    def _new_prompt_id(self, uuid: str | None = None) -> str:
        self._prompts += 1
        return uuid or f"prompt:{self._prompts}"

    def _start_turn(self, msg_id: str, *, inited: bool, synthetic: bool = False) -> list[Item]:
        self._in_turn = True
        self._turn_inited = inited
        self._turn_msg = msg_id
        self._interrupted = False
        out: list[Item] = [Emit(body=TurnStart(), synthetic=True) if synthetic else TurnStart()]
        if inited:
            out.append(MessageStarted(session_id="", message_id=msg_id))
        return out

    # ------------------------------------------------------------------ client

    def _client_user(self, message: bytes) -> list[Item]:
        line: _ClientUser = _decode(_CLIENT_USER, message)
        text = text_of(line.message.content)
        mid = self._new_prompt_id(line.uuid)
        self._unechoed.append(text)
        out: list[Item] = [MessageAccepted(session_id="", message_id=mid)]
        if self._in_turn:
            self._queued.append(mid)
            out.append(UserMessage(message_id=mid, text=text, queued=True))
            return out
        out.extend(self._start_turn(mid, inited=False))
        out.append(UserMessage(message_id=mid, text=text))
        return out

    def _client_request(self, message: bytes) -> list[Item]:
        req: _ControlRequest = _decode(_CREQ, message)
        self._client_requests[req.request_id] = req.request
        if req.request.subtype == "interrupt" and self._in_turn:
            self._interrupted = True
        return []  # a request is not yet an effect: its response says what happened

    def _client_response(self, message: bytes) -> list[Item]:
        resp: _ControlResponse = _decode(_CRESP, message)
        r = resp.response
        if r.request_id not in self._asked:
            return []
        subagent, call_id = self._asked.pop(r.request_id)
        question = r.request_id in self._questions
        self._questions.discard(r.request_id)
        if r.subtype == "success":
            answer = present(r.response)
            option = None if answer is None else _chosen_option(answer)
            if option == "deny" and not question and call_id is not None:
                self._denied.add(call_id)
            # a question the client refused to answer (behavior deny) was not answered
            outcome: Literal["answered", "cancelled"] = "cancelled" if question and option == "deny" else "answered"
            body = RequestResolved(request_id=r.request_id, outcome=outcome, answer=answer, option_id=option)
        else:
            body = RequestResolved(request_id=r.request_id, outcome="cancelled", answer=r.error)
        return [Emit(body=body, subagent_id=subagent)]

    # ---------------------------------------------------------- agent: control

    def _agent_request(self, message: bytes) -> list[Item]:
        req: _ControlRequest = _decode(_CREQ, message)
        r = req.request
        if r.subtype != "can_use_tool":
            return []
        tool = r.tool_name or "unknown"
        inp = decode_input(r.input)
        call_id = r.tool_use_id or self._call_asked_about(tool, tool_title(tool, inp)) or req.request_id
        subagent = self._task_call.get(r.agent_id) if r.agent_id else None
        if subagent is None:
            call = self.calls.get(call_id)
            subagent = call.subagent_id if call is not None else None
        self._asked[req.request_id] = (subagent, call_id)
        self._asked_calls.add(call_id)
        if tool == ASK_TOOL:
            question = self._user_question(req.request_id, r.input)
            if question is not None:
                self._questions.add(req.request_id)
                return [Emit(body=question, subagent_id=subagent)]
        ref = ToolCallRef(
            call_id=call_id,
            tool=tool,
            title=r.title or tool_title(tool, inp),
            input=present(r.input),
            category=tool_category(tool),
        )
        detail = PermissionDetail(command=inp.command, blocked_path=r.blocked_path, reason=r.decision_reason)
        body = PermissionRequest(
            request_id=req.request_id,
            tool_call=ref,
            options=_OPTIONS_WITH_RULES if r.permission_suggestions else _OPTIONS,
            detail=detail if (detail.command or detail.blocked_path or detail.reason) else None,
        )
        return [Emit(body=body, subagent_id=subagent)]

    def _call_asked_about(self, tool: str, title: str) -> str | None:
        """The call a ``can_use_tool`` request without ``tool_use_id`` asks for (2.0.0 and older):
        the oldest open call of that tool and title not asked about yet (answered or not:
        Claude Code asks once per call, in the order the calls were made)."""
        asked = self._asked_calls
        for call in self.calls:
            if call.tool == tool and call.title == title and call.call_id not in asked:
                return call.call_id
        return None

    @staticmethod
    def _user_question(request_id: str, raw: Raw) -> UserQuestion | None:
        """``AskUserQuestion`` asked through ``can_use_tool``: its questions, each with its options.

        The answer comes back as ``updatedInput.answers`` (question text -> chosen label), kept
        as the resolution's ``answer``; the question's id is its text, as the answers key it."""
        try:
            ask = _ASK_INPUT.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        if not ask.questions:
            return None
        questions = [
            Question(
                id=q.question,
                prompt=q.question,
                header=q.header,
                multi_select=q.multi_select,
                allow_free_text=True,  # Claude Code always offers "Other"
                options=[QuestionOption(id=o.label, label=o.label, description=o.description) for o in q.options],
            )
            for q in ask.questions
        ]
        return UserQuestion(request_id=request_id, blocking=True, questions=questions)

    def _cancel(self, message: bytes) -> list[Item]:
        c: _CancelRequest = _decode(_CANCEL, message)
        if c.request_id not in self._asked:
            return []
        subagent, _ = self._asked.pop(c.request_id)
        return [Emit(body=RequestResolved(request_id=c.request_id, outcome="cancelled"), subagent_id=subagent)]

    def _agent_response(self, message: bytes) -> list[Item]:
        resp: _ControlResponse = _decode(_CRESP, message)
        r = resp.response
        req = self._client_requests.pop(r.request_id, None)
        if req is None:
            return []  # an echo of the client's own answer (2.1.271+), or unknown
        if r.subtype != "success":
            return [WarningBody(message=f"{req.subtype} request failed: {r.error or 'error'}", source="claude-code")]
        if req.subtype == "initialize":
            return self._initialized(r.response)
        if req.subtype == "set_permission_mode" and req.mode:
            self._mode = req.mode
            return [ModeUpdate(mode_id=req.mode)]
        if req.subtype == "set_model" and req.model:
            self._model = req.model
            return [ModeUpdate(model=req.model)]
        return []

    def _initialized(self, raw: Raw) -> list[Item]:
        try:
            init: _InitResponse = _INIT_RESP.decode(raw)
        except msgspec.ValidationError:
            return []
        out: list[Item] = []
        if init.commands is not None:
            entries = [
                CommandEntry(
                    name=c.name,
                    description=c.description or None,
                    argument_hint=c.argument_hint or None,
                    aliases=c.aliases or None,
                    builtin=c.builtin,
                )
                for c in init.commands
            ]
            out.append(CommandsUpdate(commands=entries))
        if present(init.capabilities) is not None:
            out.append(SessionInfo(capabilities=init.capabilities))
        if init.current_permission_mode:
            self._mode = init.current_permission_mode
            out.append(ModeUpdate(mode_id=init.current_permission_mode))
        return out

    # ----------------------------------------------------------- agent: system

    def _system(self, message: bytes) -> list[Item]:
        head = self._head
        if head.subtype == "init":
            init: _Init = _decode(_INIT, message)
            return self._init(init, init.tools, init.mcp_servers, init.slash_commands)
        handler = self._system_handlers.get(head.subtype or "")
        if handler is None:
            return []
        line: _System = _decode(_SYSTEM, message)
        return [*self._session(line.session_id), *handler(line)]

    def _on_system(self, line: _SystemLine) -> list[Item]:
        if line.subtype == "init":
            # no state changes before the lists are read: a list they cannot read rereads the line
            tools = self._init_tools.read(line.tools)
            servers = self._init_servers.read(line.mcp_servers)
            commands = self._init_commands.read(line.slash_commands)
            return self._init(line, tools, servers, commands)
        handler = self._system_handlers.get(line.subtype or "")
        if handler is None:
            return []
        return [*self._session(line.session_id), *handler(line)]

    def _init(
        self, init: _Init | _SystemLine, tools: list[str], mcp_servers: list[_McpServer], slash_commands: list[str]
    ) -> list[Item]:
        out: list[Item] = self._session(init.session_id, init)
        if not self._in_turn:
            mid = self._queued.popleft() if self._queued else self._new_prompt_id()
            out.extend(self._start_turn(mid, inited=True))
        elif not self._turn_inited:
            self._turn_inited = True
            out.append(MessageStarted(session_id="", message_id=self._turn_msg))
        else:
            # the CLI began its next turn before this one's result (a background
            # agent's turn): it opens right after that result
            self._held = self._queued.popleft() if self._queued else self._new_prompt_id()
        out.append(SessionInfo(cwd=init.cwd, model=init.model, capabilities=present(init.capabilities)))
        if slash_commands != self._commands:
            self._commands = slash_commands
            out.append(CommandsUpdate(commands=[CommandEntry(name=c) for c in slash_commands]))
        if init.permission_mode != self._mode or init.model != self._model:
            self._mode, self._model = init.permission_mode, init.model
            out.append(ModeUpdate(mode_id=init.permission_mode, model=init.model))
        applied: list[ContextApplied | ToolChangeApplied] = []
        # every init repeats the tools and servers: most often the same as the last one's
        if tools != self._tools:
            before, now = set(self._tools), set(tools)
            added = [t for t in tools if t not in before]
            removed = [t for t in self._tools if t not in now]
            if added or removed:
                applied.append(ToolChangeApplied(added=added or None, removed=removed or None))
            self._tools = list(tools)
        servers = {s.name: s.status for s in mcp_servers}
        if servers != self._mcp:
            for name, status in servers.items():
                if name not in self._mcp or self._mcp[name] != status:
                    action: Literal["added", "updated", "failed"] = (
                        "failed" if status == "failed" else ("updated" if name in self._mcp else "added")
                    )
                    applied.append(ContextApplied(what="mcp-server", action=action, name=name, detail=status))
            applied.extend(
                ContextApplied(what="mcp-server", action="removed", name=name)
                for name in self._mcp
                if name not in servers
            )
            self._mcp = servers
        if applied:
            out.append(ContextUpdated(session_id="", applied=applied))
        return out

    def _status(self, line: _System) -> list[Item]:
        out: list[Item] = []
        if line.permission_mode and line.permission_mode != self._mode:
            self._mode = line.permission_mode
            out.append(ModeUpdate(mode_id=line.permission_mode))
        if line.status == "compacting":
            self._compactions += 1
            self._compacting = f"compaction:{self._compactions}"
            out.append(Compaction(compaction_id=self._compacting, status="in_progress"))
        elif line.compact_result is not None:
            cid = self._compacting or self._next_compaction()
            ok = line.compact_result == "success"
            out.append(Compaction(compaction_id=cid, status="completed" if ok else "failed", error=line.compact_error))
            self._compacting = None if ok else self._compacting
        return out

    def _next_compaction(self) -> str:
        self._compactions += 1
        return f"compaction:{self._compactions}"

    def _compact_boundary(self, line: _System) -> list[Item]:
        cid = self._compacting or self._next_compaction()
        self._compacting = None
        return [
            Compaction(compaction_id=cid, status="completed"),
            ContextUpdated(
                session_id="",
                applied=[ContextApplied(what="compaction", action="updated", detail=present(line.compact_metadata))],
            ),
        ]

    def _api_retry(self, line: _System) -> list[Item]:
        status = f"{line.error_status} " if line.error_status is not None else ""
        delay = round(line.retry_delay_ms) if line.retry_delay_ms is not None else None
        msg = f"API error {status}({line.error or 'unknown'}); retry {line.attempt}/{line.max_retries} in {delay} ms"
        return [WarningBody(message=msg, source="api_retry")]

    def _informational(self, line: _System) -> list[Item]:
        # the CLI's own notice (2.1.290: auto mode's billing, ``level: warning``), as
        # claude-agent-acp relays it: a warning, never the model's text
        return [WarningBody(message=line.content, source="agent")] if line.content else []

    def _hook_started(self, line: _System) -> list[Item]:
        return [Task(task_id=line.hook_id or "hook", task_kind="shell", phase="started", label=line.hook_name)]

    def _hook_progress(self, line: _System) -> list[Item]:
        return [Task(task_id=line.hook_id or "hook", task_kind="shell", phase="progress", label=line.hook_name)]

    def _hook_response(self, line: _System) -> list[Item]:
        phase = _HOOK_PHASE.get(line.outcome or "", "completed")
        return [Task(task_id=line.hook_id or "hook", task_kind="shell", phase=phase, label=line.hook_name)]

    def _task_started(self, line: _System) -> list[Item]:
        task_id = line.task_id or ""
        if line.task_type == "local_agent" and line.tool_use_id:
            self._task_call[task_id] = line.tool_use_id
            sub = Subagent(
                subagent_id=line.tool_use_id,
                phase="progress",
                name=line.subagent_type,
                description=line.description,
                background=line.is_backgrounded,
                activity="started",
                call_id=line.tool_use_id,
            )
            return [sub]
        kind = _TASK_KIND.get(line.task_type or "", "agent")
        return [
            Task(
                task_id=task_id,
                task_kind=kind,
                phase="started",
                label=line.description,
                parent_call_id=line.tool_use_id,
            )
        ]

    def _task_progress(self, line: _System) -> list[Item]:
        call = self._task_call.get(line.task_id or "")
        if call is not None:
            activity = line.last_tool_name or line.description
            return [
                Subagent(subagent_id=call, phase="progress", activity=activity, stats=present(line.usage), call_id=call)
            ]
        return [Task(task_id=line.task_id or "", task_kind="agent", phase="progress", label=line.description)]

    def _task_end(self, line: _System, status: str | None, *, result: str | None = None) -> list[Item]:
        call = self._task_call.get(line.task_id or "")
        phase = _SUBAGENT_PHASE.get(status or "", "progress")
        if call is not None:
            if call in self._subagent_done:
                phase = "progress"  # the end was already reported (task_updated, then task_notification)
            elif phase != "progress":
                self._subagent_done.add(call)
            return [
                Subagent(
                    subagent_id=call,
                    phase=phase,
                    activity=status,
                    result=result,
                    stats=present(line.usage),
                    call_id=call,
                )
            ]
        return [Task(task_id=line.task_id or "", task_kind="agent", phase=phase, label=line.description or result)]

    def _task_updated(self, line: _System) -> list[Item]:
        # task_notification follows with the summary and ends it (foreground agents also
        # end with their tool_result), so a status change here is progress
        status = line.patch.status if line.patch else None
        call = self._task_call.get(line.task_id or "")
        if call is not None:
            return [Subagent(subagent_id=call, phase="progress", activity=status, call_id=call)]
        return self._task_end(line, status)

    def _task_notification(self, line: _System) -> list[Item]:
        call_id = self._task_call.get(line.task_id or "")
        call = self.calls.get(call_id) if call_id is not None else None
        if call is not None and line.summary is not None and line.summary == call.title:
            # 2.1.142: a foreground agent's summary is only its task's description (the
            # Agent call's title), not its answer; the Agent call's result, still to come,
            # has the answer and ends the sub-agent
            sub = call.call_id
            return [
                Subagent(
                    subagent_id=sub, phase="progress", activity=line.status, stats=present(line.usage), call_id=sub
                )
            ]
        return self._task_end(line, line.status, result=line.summary)

    def _permission_denied(self, line: _System) -> list[Item]:
        call_id = line.tool_use_id or ""
        tool = line.tool_name or "unknown"
        call = self.calls.get(call_id)
        self._auto_decided.add(call_id)
        title = (call.title if call is not None else None) or tool
        ref = ToolCallRef(call_id=call_id, tool=tool, title=title, category=tool_category(tool))
        subagent = call.subagent_id if call is not None else None
        return [Emit(body=PermissionAuto(tool_call=ref, option_id="deny"), subagent_id=subagent)]

    def _local_command_output(self, line: _System) -> list[Item]:
        return [AssistantMessage(message_id=line.uuid or "local-command", text=line.content or "")]

    def _conversation_reset(self, message: bytes) -> list[Item]:
        self._reset_pending = True
        return []  # the new session id comes with the next line: conversation-reset is emitted there

    # ------------------------------------------------------- agent: assistant

    def _thread(self, parent: str | None, msg_id: str) -> _Thread:
        t = self._threads.get(parent)
        if t is None:
            t = self._threads[parent] = _Thread(msg_id)
        elif t.msg_id != msg_id:
            t.restart(msg_id)  # in place: a new entry would cost a bounded table's insert, for the same key
        return t

    def _assistant(self, message: bytes) -> list[Item]:
        line: _Conversation = _decode(_CONV, message)
        return self._on_assistant(line, _content(line.message.content))

    def _assistant_line(self, line: _AssistantLine) -> list[Item]:
        return self._on_assistant(line, line.message.content)

    def _on_assistant(self, line: _Conversation | _ConversationLine, content: _Content) -> list[Item]:
        out: list[Item] = self._session(line.session_id)
        sub = line.parent_tool_use_id
        msg = line.message
        if content is None:
            blocks = []
        elif isinstance(content, str):
            blocks = [ContentBlock(type="text", text=content)]
        else:
            blocks = content
        if line.is_api_error_message or (msg.model == "<synthetic>" and (line.error or _api_error_text(blocks))):
            # up to 2.0.x the synthetic line of a failed call has neither ``error`` nor
            # ``is_api_error_message``: its text, the CLI's "API Error: ..." words, says what it is
            text = "".join(b.text or "" for b in blocks)
            kind = line.error or (None if line.is_api_error_message else "api_error")
            out.append(
                on_thread(Error(message=text or line.error or "API error", error_type=kind, recoverable=True), sub)
            )
            return out
        if sub is None and msg.usage is not None:
            # what the main thread's last model call held: its whole input and what it wrote
            self._context_used = total_tokens(msg.usage)
        thread = self._thread(sub, msg.id)
        started: dict[str, str] = {}  # the calls this line starts (the core's table has them after it)
        for block in blocks:
            # the blocks a stream started that no complete line has finished yet (none when
            # the stream is off, as most often: then no sort)
            streamed = [i for i, b in sorted(thread.blocks.items()) if not b.final] if thread.blocks else None
            index = streamed[0] if streamed else thread.next_index
            thread.next_index = index + 1
            sb = thread.blocks.get(index)
            if sb is not None:
                sb.final = True
            _add(out, self._block(thread, index, block, started, streamed=sb is not None), sub)
        return out

    def _block(
        self, thread: _Thread, index: int, block: ContentBlock, started: dict[str, str], *, streamed: bool
    ) -> list[Body]:
        t = block.type
        if t == "text":
            return [AssistantMessage(message_id=thread.text_id(index), text=block.text or "")]
        if t == "thinking":
            return [
                Reasoning(
                    reasoning_id=block_reasoning_id(thread.msg_id, index), text=block.thinking or None, redacted=False
                )
            ]
        if t == "redacted_thinking":
            return [Reasoning(reasoning_id=block_reasoning_id(thread.msg_id, index), redacted=True)]
        if t in ("tool_use", "server_tool_use"):
            call_id = block.id or f"{thread.msg_id}:{index}"
            tool = block.name or "unknown"
            if streamed and call_id in self.calls:
                # the complete input of a call its stream started: the update names it better
                return call_started(call_id, tool, block.input, phase="updated")
            started[call_id] = tool
            return call_started(call_id, tool, block.input)
        if t.endswith("_tool_result") and block.tool_use_id:
            # a server tool's result (web_search_tool_result, ...), inside the assistant message
            call = self.calls.get(block.tool_use_id)
            tool = call.tool if call is not None else started.get(block.tool_use_id, "unknown")
            return call_finished(block.tool_use_id, tool, block.content, bool(block.is_error), None)
        return []

    # ------------------------------------------------------------ agent: user

    def _user(self, message: bytes) -> list[Item]:
        line: _Conversation = _decode(_CONV, message)
        return self._on_user(line, _content(line.message.content))

    def _user_line(self, line: _UserLine) -> list[Item]:
        return self._on_user(line, line.message.content)

    def _on_user(self, line: _Conversation | _ConversationLine, content: _Content) -> list[Item]:
        out: list[Item] = self._session(line.session_id)
        sub = line.parent_tool_use_id
        blocks = content if isinstance(content, list) else []
        results = [b for b in blocks if b.type == "tool_result"]
        if not results:
            text = content_text(content)
            if line.is_replay and self._unechoed and self._unechoed[0] == text:
                self._unechoed.popleft()
                return out  # the echo of a prompt already seen on stdin
            out.append(on_thread(UserMessage(message_id=line.uuid or "user", text=text), sub))
            return out
        decided = {m.id: m for m in line.tool_result_meta}
        single = len(results) == 1  # the line's raw result is the result of its only block
        for block in results:
            call_id = block.tool_use_id or ""
            call = self.calls.get(call_id)
            tool = call.tool if call is not None else "unknown"
            meta = decided.get(call_id)
            if meta is not None and call_id not in self._auto_decided:
                title = (call.title if call is not None else None) or tool
                auto = permission_auto(call_id, tool, title, meta.permission_decision)
                if auto is not None:
                    out.append(on_thread(auto, sub))
            self._auto_decided.discard(call_id)
            bodies = call_finished(
                call_id,
                tool,
                block.content,
                bool(block.is_error),
                decode_tool_result(line.tool_use_result) if single and reads_result(tool) else None,
                subagent_done=call_id in self._subagent_done,
                executed=(meta is None or meta.non_execution_kind is None) and call_id not in self._denied,
                unreported=present(line.tool_use_result) is None,
            )
            self._subagent_done.discard(call_id)
            self._denied.discard(call_id)
            self._asked_calls.discard(call_id)
            _add(out, bodies, sub)
        return out

    # ----------------------------------------------------- agent: stream_event

    def _stream_event(self, message: bytes) -> list[Item]:
        return self._on_stream_event(_decode(_STREAM, message))

    def _on_stream_event(self, line: _StreamEvent) -> list[Item]:
        ev = line.event
        sub = line.parent_tool_use_id
        out: list[Item] = self._session(line.session_id)
        if ev.type == "message_start" and ev.message is not None:
            started = self._threads[sub] = _Thread(ev.message.id)
            started.start_usage = ev.message.usage
            return out
        thread = self._threads.get(sub)
        if thread is None:
            return out
        body: Body | None = None
        if ev.type == "content_block_start" and ev.content_block is not None:
            body = self._block_start(thread, ev.index, ev.content_block)
        elif ev.type == "content_block_delta" and ev.delta is not None:
            body = self._block_delta(thread, ev.index, ev.delta)
        elif ev.type == "message_delta" and ev.usage is not None:
            body = UsageBody(tokens=tokens_of(_with_start_input(ev.usage, thread.start_usage)), scope="call")
        if body is not None:
            out.append(on_thread(body, sub))
        return out

    def _block_start(self, thread: _Thread, index: int, cb: ContentBlock) -> Body | None:
        if cb.type in ("tool_use", "server_tool_use") and cb.id:
            tool = cb.name or "unknown"
            thread.blocks[index] = _Block(cb.type, cb.id, tool)
            return ToolCall(call_id=cb.id, tool=tool, phase="started", title=tool, category=tool_category(tool))
        thread.blocks[index] = _Block(cb.type)
        if cb.type == "text":
            thread.text_id(index)
        return None

    def _block_delta(self, thread: _Thread, index: int, d: _Delta) -> Body | None:
        block = thread.blocks.get(index)
        if d.type == "text_delta" and d.text:
            return AssistantDelta(message_id=thread.text_id(index), text=d.text)
        if d.type == "thinking_delta" and d.thinking:
            return ReasoningDelta(reasoning_id=block_reasoning_id(thread.msg_id, index), text=d.thinking)
        if d.type == "input_json_delta" and block is not None and block.call_id and block.tool:
            fragment = d.partial_json or ""
            block.size += len(fragment)
            partial = None
            if block.size <= PARTIAL_INPUT:  # re-reading a large input on every delta is quadratic
                block.json.append(fragment)
                try:
                    partial = _PARTIAL_JSON.decode("".join(block.json))
                except msgspec.DecodeError:
                    partial = None
            elif block.json:
                block.json = []  # the complete assistant line carries the input
            return ToolCall(
                call_id=block.call_id,
                tool=block.tool,
                phase="updated",
                category=tool_category(block.tool),
                input=partial,
            )
        return None

    # ---------------------------------------------------------- agent: result

    def _context(self, r: _Result) -> ContextWindow | None:
        """The context at the end of the turn: the last main-thread call's tokens, and the
        window of the model that made it (``modelUsage[model].contextWindow``)."""
        used = self._context_used
        if used is None:
            return None
        windows = [m.context_window for m in (r.model_usage or {}).values() if m.context_window]
        size = windows[0] if len(windows) == 1 else None  # several models: which one is not said
        if self._model is not None and r.model_usage is not None and self._model in r.model_usage:
            size = r.model_usage[self._model].context_window or size
        return ContextWindow(used=used, size=size)

    def _result(self, message: bytes) -> list[Item]:
        return self._on_result(_decode(_RESULT, message))

    def _on_result(self, r: _Result) -> list[Item]:
        out: list[Item] = self._session(r.session_id)
        if not self._in_turn:
            # a result with no turn open (``--output-format json``, or a lost init)
            out.extend(self._start_turn(self._new_prompt_id(), inited=True, synthetic=True))
        turn_tokens = tokens_of(r.usage) if r.usage is not None else None
        turn_cost: Cost | None = None
        if r.model_usage_since_last_result:
            amount = sum(m.cost_usd for m in r.model_usage_since_last_result.values())
            turn_cost = Cost(amount=amount, currency="USD", source="agent")
        context = self._context(r)
        if turn_tokens is not None or turn_cost is not None or context is not None:
            out.append(UsageBody(context=context, tokens=turn_tokens, cost=turn_cost, scope="turn"))
        if r.model_usage is not None or r.total_cost_usd is not None:
            out.append(
                UsageBody(
                    tokens=_sum_model_usage(r.model_usage) if r.model_usage else None,
                    cost=Cost(amount=r.total_cost_usd, currency="USD", source="agent")
                    if r.total_cost_usd is not None
                    else None,
                    scope="session",
                )
            )
        interrupted = (
            self._interrupted
            or r.subtype == "error_during_execution"
            or (r.terminal_reason or "").startswith("aborted")
        )
        completion = Completion(
            stop_reason=_stop_reason(r, interrupted),
            text=r.result,
            usage=CompletionUsage(tokens=turn_tokens, cost=turn_cost) if turn_tokens or turn_cost else None,
            error=_error_info(r) if r.is_error else None,
        )
        out.append(
            TurnComplete(reason="interrupt" if interrupted else "ok", stop_reason=r.terminal_reason or r.stop_reason)
        )
        out.append(MessageCompleted(session_id="", message_id=self._turn_msg, result=completion))
        self._in_turn = False
        self._turn_inited = False
        self._interrupted = False
        if self._held is not None:
            held, self._held = self._held, None
            out.extend(self._start_turn(held, inited=True, synthetic=True))
        return out

    # ----------------------------------------------------------- agent: other

    def _rate_limit(self, message: bytes) -> list[Item]:
        line: _RateLimit = _decode(_RATE, message)
        info = present(line.rate_limit_info)
        out: list[Item] = [UsageBody(rate_limits=info)]
        status = _RATE_INFO.decode(info).status if info is not None else None
        # the account Claude Code runs with: it names none in the stream
        if status == "rejected" and not self._exhausted:
            self._exhausted = True
            out.append(AccountExhausted(session_id="", agent=self.agent, account="default", reason="limit"))
        elif status in ("allowed", "allowed_warning") and self._exhausted:
            self._exhausted = False
            out.append(AccountAvailable(session_id="", agent=self.agent, account="default"))
        return out

    def _tool_progress(self, message: bytes) -> list[Item]:
        p: _ToolProgress = _decode(_PROGRESS, message)
        body = ToolCall(call_id=p.tool_use_id, tool=p.tool_name, phase="updated", category=tool_category(p.tool_name))
        return [Emit(body=body, subagent_id=p.parent_tool_use_id)]

    def _auth_status(self, message: bytes) -> list[Item]:
        a: _AuthStatus = _decode(_AUTH, message)
        return [Error(message=a.error, error_type="authentication", recoverable=False)] if a.error else []


# --------------------------------------------------------------------------
# Helpers


def _api_error_text(blocks: list[ContentBlock]) -> bool:
    """Whether a ``<synthetic>`` line's content is the CLI's report of a failed API call."""
    return bool(blocks) and all(b.type == "text" for b in blocks) and (blocks[0].text or "").startswith("API Error")


def _add(out: list[Item], bodies: list[Body], subagent: str | None) -> None:
    """``out`` + ``bodies`` as :func:`~normalize._contract.on_thread` gives them."""
    if subagent is None:
        out += bodies
    else:
        out += [Emit(body=b, subagent_id=subagent) for b in bodies]


def _sum_model_usage(usage: dict[str, _ModelUsage]) -> Tokens:
    inp = out = cr = cw = 0
    for m in usage.values():  # one pass (four sum() of generators cost four times the loop)
        inp += m.input_tokens
        out += m.output_tokens
        cr += m.cache_read_input_tokens
        cw += m.cache_creation_input_tokens
    return Tokens(input=inp + cr + cw, output=out, total=inp + out + cr + cw, cache_read=cr, cache_write=cw)


def _stop_reason(
    r: _Result, interrupted: bool
) -> Literal["end_turn", "max_tokens", "max_turns", "refusal", "cancelled", "error"]:
    if interrupted:
        return "cancelled"
    if r.subtype == "error_max_turns":
        return "max_turns"
    if r.is_error or r.subtype.startswith("error"):
        return "error"
    return _STOP_REASONS.get(r.stop_reason or "", "end_turn")


def _error_info(r: _Result) -> ErrorInfo:
    message = "; ".join(r.errors) or r.result or r.subtype
    if r.subtype != "success":
        return ErrorInfo(message=message, error_type=r.subtype)
    # a ``success`` that is an error: the terminal reason names it (``api_error`` in 2.1.332);
    # 2.1.142 says ``completed`` there, and only ``api_error_status`` tells the API failed
    reason = r.terminal_reason if r.terminal_reason != "completed" else None
    if reason is None and present(r.api_error_status) is not None:
        reason = "api_error"
    return ErrorInfo(message=message, error_type=reason)
