"""The `hm-json` adapter: hm's ``hm agent --output json`` event stream and its ``--rpc`` protocol.

Facts (hm JSON events v1 and the RPC protocol document; captures in
adapters/hm-json/captures/hm-handwritten, hand-written from those documents, no hm binary
was available to record; "doc" = stated by the documents, "assumed" = where they are silent):

* Every agent line is ``{"v":1,"type":...,"session":...,"time":...}`` plus the type's
  fields, snake_case.  New types and fields appear without a new ``v`` (doc): unknown types
  are kept untranslated, unknown fields ignored.
* ``session_start`` is the first line and ``session_end`` the last (doc); a stream without
  ``session_end`` was cut off.  ``model`` is ``""`` for the provider's default (doc).
* There is no turn id and no turn-start line: a turn starts with a user ``message_end`` of
  the session's own session id, also under ``-p`` (assumed), and ends with ``turn_end``
  (doc).  A background sub-agent's report and a queued ``follow_up`` arrive as user
  ``message_end`` after ``turn_end`` and start the next turn; a ``steer`` arrives as a user
  ``message_end`` inside the running turn (seen in the captures).
* ``message_start`` / ``tool_start`` carry no id: replies and their reasoning get ids
  derived from the session id and their position.  ``thinking_delta`` is the model's
  reasoning *summary* (doc).  ``message_end`` repeats the reply's whole text; it is ``""``
  for a reply that only made tool calls (doc).
* Sub-agents have no ``session_start``: their lines carry their own ``session`` and
  interleave with the parent's (doc); any session id not announced by a ``session_start``
  is a sub-agent, linked to the parent's oldest ``agent`` tool call not yet linked
  (assumed).  A sub-agent's work ends with ``subagent_end``, with ``error`` when it ended
  early (doc).
* ``approval_needed`` follows its ``tool_call``; ``approval`` says what was decided.  With
  ``--approve edits|all``, under ``-p``, and for calls a ``for_session`` grant covers, both
  lines still appear with nothing sent by the client (doc).
* ``blocked`` has no ``call_id``: it belongs to the ``tool_call`` just before it in the same
  session (assumed); guard.yaml blocks are left out of ``session_end.refused`` (assumed).
* ``usage`` is one model call (doc), sub-agents' calls included; ``input`` counts the cached
  tokens too (``input == cache_read + cache_write + new``, seen); ``cost`` is USD, ``0`` when
  unknown (doc).  ``session_end.usage`` is the session's total, sub-agents included.
* RPC: commands ``{"id":...,"type":...}`` on stdin, ``response {id, command, ok, error,
  data}`` on stdout.  ``id`` is optional and any JSON value; a command without ``id`` gets a
  response without ``id`` (assumed), a line that is not JSON gets ``id: null`` and
  ``command: ""`` (assumed).  A response lands between a turn's events: matched by id, not
  by position (doc).  ``prompt`` is answered when its turn starts, ``compact`` when it is
  done (after ``compaction_end``), ``fork`` after the fork's new ``session_start`` (doc).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import msgspec
from msgspec import Raw, structs

from normalize import (
    AssistantDelta,
    AssistantMessage,
    Category,
    CommandOutput,
    Compaction,
    Completion,
    CompletionUsage,
    ContextDegraded,
    ContextDrop,
    ContextWindow,
    Cost,
    Direction,
    Emit,
    Error,
    ErrorInfo,
    FileDiff,
    Image,
    Item,
    Location,
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
    PermissionsUpdate,
    Question,
    Reasoning,
    ReasoningDelta,
    RequestResolved,
    Sample,
    SessionCreated,
    SessionFailed,
    SessionInfo,
    SessionRecord,
    SessionResumed,
    Source,
    Subagent,
    Tokens,
    ToolCall,
    ToolCallRef,
    TurnComplete,
    TurnStart,
    Usage,
    UserMessage,
    UserQuestion,
    Warning,  # noqa: A004 - the spec's kind name
)

from ._base import BuiltinAdapter, on_thread
from ._hm_json_views import (
    _any_decoder,
    _Command,
    _command_decoder,
    _encoder,
    _head_decoder,
    _Image,
    _input_decoder,
    _int_decoder,
    _Line,
    _line_decoder,
    _raw_or_none,
    _session_data_decoder,
    _SessionData,
    _state_decoder,
    _ToolInput,
    _Usage,
)
from ._limits import (
    BUFFER_TEXT,
    OPEN_ITEMS,
    PENDING_REQUESTS,
    Bounded,
    Recent,
    buffer_warning,
)

__all__ = ["HmJsonAdapter"]

#: Every documented agent line type (events.md and rpc.md).
LINE_TYPES: Final = frozenset(
    {
        "session_start",
        "message_start",
        "text_delta",
        "thinking_delta",
        "tool_start",
        "tool_call",
        "approval_needed",
        "approval",
        "question",
        "blocked",
        "tool_result",
        "message_end",
        "usage",
        "retry",
        "error",
        "warning",
        "compaction_start",
        "compaction_end",
        "subagent_end",
        "turn_end",
        "session_end",
        "response",
    }
)

#: The placeholder hm sends for an image to a model without vision (doc: ``warning``).
_NO_VISION: Final = "[image omitted: model has no vision]"

#: ``approval_needed.category`` -> category: what the mode asks about, which may be more
#: precise than the tool (a ``shell`` call that deletes, or reaches the network).
APPROVAL_CATEGORIES: Final[dict[str, Category]] = {
    "read": "read",
    "edit": "edit",
    "delete": "delete",
    "move": "move",
    "search": "search",
    "shell": "execute",
    "command": "execute",
    "network": "fetch",
}

#: Tool name -> category.  hm's built-in tools as the captures show them; others are "other".
TOOL_CATEGORIES: Final[dict[str, Category]] = {
    "shell": "execute",
    "read": "read",
    "edit": "edit",
    "write": "edit",
    "grep": "search",
    "glob": "search",
    "find": "search",
    "ls": "search",
    "fetch": "fetch",
    "web_fetch": "fetch",
    "web_search": "web-search",
    "think": "think",
}

#: Tools whose result is a shell command's output.
SHELL_TOOLS: Final = frozenset({"shell"})
#: The tool that spawns sub-agents.
AGENT_TOOL: Final = "agent"

#: The choices of an approval, as ``permission-request`` options.
ALLOW, ALLOW_SESSION, REJECT = "allow", "allow-session", "reject"
PERMISSION_OPTIONS: Final = [
    PermissionOption(id=ALLOW, kind="allow_once", label="Allow"),
    PermissionOption(id=ALLOW_SESSION, kind="allow_always", label="Allow for this session"),
    PermissionOption(id=REJECT, kind="reject_once", label="Refuse"),
]

#: ``turn_end.error`` / ``subagent_end.error`` for an abort.
ABORTED: Final = "aborted"

#: The commands whose text is a user message.
MESSAGE_COMMANDS: Final = frozenset({"prompt", "steer", "follow_up"})


# ------------------------------------------------------------------ state


class _Note:
    """What hm's tool result needs of its call, attached to the core's entry (``Emit.note``).

    The core keeps the tool, title, category and sub-agent; the note the input (for the
    approval's ``toolCall`` and an edit's diff), the path it names, and whether an approval
    or a guard refused it (a refused call ran nothing: no output, no diff).
    """

    __slots__ = ("input", "path", "refused")

    def __init__(self, input: Raw | None, path: str | None) -> None:
        self.input = input
        self.path = path
        self.refused = False


@dataclass
class _Reply:
    """The assistant reply streaming in one session."""

    message_id: str
    reasoning_id: str
    thinking: list[str] = field(default_factory=list)
    size: int = 0  # characters of thinking streamed, kept up to BUFFER_TEXT


@dataclass
class _Sub:
    """A sub-agent seen in the stream."""

    call_id: str | None
    last_text: str | None = None


@dataclass
class _Pending:
    """A client command waiting for its response."""

    key: str | None  # the canonical JSON of its id, None without id
    command: _Command
    message_id: str | None


@dataclass
class _Turn:
    messages: list[str] = field(default_factory=list)
    text: str | None = None
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0
    calls: int = 0


def _tokens(u: _Usage) -> Tokens:
    return Tokens(
        input=u.input,
        output=u.output,
        total=u.input + u.output,
        cache_read=u.cache_read,
        cache_write=u.cache_write,
    )


def _cost(amount: float) -> Cost | None:
    """hm writes 0 when the price is unknown: no cost then."""
    return Cost(amount=amount, currency="USD", source="agent") if amount else None


def _image(img: _Image) -> Image:
    return Image(media_type=img.media_type, data=img.data, width=img.width, height=img.height)


def _tool_input(raw: Raw | None) -> _ToolInput | None:
    if raw is None:
        return None
    try:
        return _input_decoder.decode(raw)
    except msgspec.DecodeError:
        return None  # not an object, or fields of other types: nothing normalize reads


def _diff(path: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=f"a/{path}", tofile=f"b/{path}"
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


Handler = Callable[["_Line", "str | None"], list[Item]]
CommandHandler = Callable[["_Line", "_Pending | None"], list[Item]]


class HmJsonAdapter(BuiltinAdapter):
    """hm ``--output json`` and ``--rpc`` streams -> normalized events.  See the module's Facts."""

    protocol = "hm-json"
    announces_session = True
    agent = "hm"

    def __init__(self) -> None:
        super().__init__()
        self._main: str | None = None  # the session hm works in (changes at a fork)
        self._mains: Recent = Recent()
        self._created = False
        self._ended = False  # session_end seen
        self._turn: _Turn | None = None
        self._subs: Bounded[str, _Sub] = Bounded("sub-agent", OPEN_ITEMS)
        #: ``agent`` calls whose sub-agent has not spoken yet: (call id, input), oldest first
        self._unlinked_agents: list[tuple[str, Raw | None]] = []
        #: session -> its latest tool_call's start, which ``blocked`` and the approval lines follow
        self._last_call: Bounded[str, ToolCall] = Bounded("session", OPEN_ITEMS)
        self._requests: Bounded[str, str | None] = Bounded("request", PENDING_REQUESTS)  # -> sub-agent id
        self._approves: Bounded[str, _Command] = Bounded("approve command", PENDING_REQUESTS)  # not yet decided
        self._aborting = False
        self._pending: list[_Pending] = []
        self._queued: list[tuple[str, str, bool]] = []  # accepted messages: (id, text, queued)
        self._replies: Bounded[str, _Reply] = Bounded("reply", OPEN_ITEMS)
        self._used_ids: Recent = Recent()
        self._n_commands = 0
        self._n_replies = 0
        self._n_users = 0
        self._n_compactions = 0
        self._compaction: Bounded[str, str] = Bounded("compaction", OPEN_ITEMS)  # session -> open compaction id
        self._lines: dict[str, Handler] = {
            "session_start": self._session_start,
            "message_start": self._message_start,
            "text_delta": self._text_delta,
            "thinking_delta": self._thinking_delta,
            "tool_start": self._tool_start,
            "tool_call": self._tool_call,
            "approval_needed": self._approval_needed,
            "approval": self._approval,
            "question": self._question,
            "blocked": self._blocked,
            "tool_result": self._tool_result,
            "message_end": self._message_end,
            "usage": self._usage,
            "retry": self._retry,
            "error": self._error,
            "warning": self._warning,
            "compaction_start": self._compaction_start,
            "compaction_end": self._compaction_end,
            "subagent_end": self._subagent_end,
            "turn_end": self._turn_end,
            "session_end": self._session_end,
            "response": self._response,
        }
        self._responses: dict[str, CommandHandler] = {
            "prompt": self._accepted,
            "steer": self._accepted,
            "follow_up": self._accepted,
            "answer": self._answered,
            "abort": self._aborted,
            "set_mode": self._mode_set,
            "set_model": self._model_set,
            "get_state": self._state,
            "fork": self._forked,
        }

    # ------------------------------------------------------------ detection

    @classmethod
    def detect(cls, sample: Sequence[Sample]) -> float:
        """Scores the lines it recognises; an unknown type or a line that is not JSON is tolerated.

        A later hm release adds line types (kept as ``session.update``), and a
        wrapper may print a banner first: neither may hide the stream.  Most of
        the agent's JSON lines must be hm's (``v: 1`` and a session).
        """
        seen = other = 0
        first: str | None = None
        for data, from_ in sample:
            if from_ == "client":
                continue
            try:
                head = _head_decoder.decode(data)
            except msgspec.DecodeError:
                other += 1
                continue
            if head.v != 1 or head.session is None:
                other += 1
                continue
            if head.type in LINE_TYPES:
                first = first or head.type
                seen += 1
        if not seen or seen < other:
            return 0.0
        return 0.95 if first == "session_start" else 0.7

    # ------------------------------------------------------------ feed

    def feed(self, message: bytes, from_: Direction = "agent") -> list[Item]:
        if self._closed:  # the check's call only when it raises: feed runs once per line
            self._check_open()
        if from_ == "client":
            return self._command(message)
        try:
            line = _line_decoder.decode(message)
        except msgspec.ValidationError as exc:
            return self._off_shape(message, exc)
        except msgspec.DecodeError as exc:
            raise MalformedMessage(f"not an hm JSON line: {exc}") from None
        out: list[Item]
        session = line.session
        if not self._created and line.type != "session_start" and session:
            # A stream that does not start with session_start (cut at the head): what it knows.
            self._created = True
            self._set_main(session)
            record = SessionRecord(id="", agent="", protocol="", native_session_id=session)
            out = [_created(record), Source(method=line.type, ts=line.time)]
        else:
            out = [Source(method=line.type, ts=line.time)]
        handler = self._lines.get(line.type)
        if handler is None:
            out.append(Passthrough(method=line.type))
            return out
        # most lines are the main session's: known without _subagent_of's look-ups
        sub = None if session == self._main else self._subagent_of(line, out)
        items = handler(line, sub)
        if line.type == "session_start" and items and isinstance(items[0], SessionCreated | SessionResumed):
            # the Session takes the record only as the first item of a message (only a
            # session_start gives one)
            return [items[0], *out, *items[1:]]
        out += items
        return out

    def _off_shape(self, message: bytes, exc: msgspec.ValidationError) -> list[Item]:
        """A JSON object whose fields do not have the documented types."""
        try:
            head = _head_decoder.decode(message)
        except msgspec.DecodeError:
            raise MalformedMessage(f"not an hm JSON line: {exc}") from None
        if head.type in LINE_TYPES:
            raise MalformedMessage(f"hm {head.type} line with a field of the wrong type: {exc}") from None
        return [Source(method=head.type or None), Passthrough(method=head.type or None)]

    def close(self) -> list[Item]:
        self._closed = True
        out: list[Item] = []
        # calls, requests and sub-agents left open are settled by the core (docs/adapters.md)
        self._requests.clear()
        if self._turn is not None:
            # The Session reports the cut-off turn itself; the messages of that turn end here.
            err = ErrorInfo(message="the stream ended during the turn", error_type="cut-off")
            out.extend(self._complete_messages("error", err))
            self._turn = None
        elif self._created and not self._ended:
            reason = "the stream ended without session_end"
            err_body = Error(message=reason, error_type="cut-off", recoverable=False)
            out.append(Emit(body=err_body, synthetic=True))
            out.append(SessionFailed(session_id="", error=ErrorInfo(message=reason, error_type="cut-off")))
        return out

    # ------------------------------------------------------------ sessions and sub-agents

    def _set_main(self, session: str) -> None:
        self._main = session
        self._mains.add(session)

    def _subagent_of(self, line: _Line, out: list[Item]) -> str | None:
        """The sub-agent a line comes from (None for the session's own), announcing new ones."""
        sid = line.session
        if not sid or sid in self._mains or line.type == "session_start":
            return None
        if sid not in self._subs:
            call_id, raw = self._unlinked_agents.pop(0) if self._unlinked_agents else (None, None)
            self._subs[sid] = _Sub(call_id=call_id)
            inp = _tool_input(raw) if call_id is not None else None
            out.append(
                Subagent(
                    subagent_id=sid,
                    phase="started",
                    description=inp.description if inp else None,
                    prompt=inp.prompt if inp else None,
                    background=inp.background if inp else None,
                    call_id=call_id,
                )
            )
        return sid

    def _session_start(self, line: _Line, sub: str | None) -> list[Item]:
        fork = self._take_pending_fork()
        previous = self._main
        record = SessionRecord(
            id="",
            agent="",
            protocol="",
            native_session_id=line.session or None,
            cwd=line.root,
            model=line.model or None,
            mode=line.mode,
            provider=line.provider or None,
            created_at=line.time,
            fork_of=previous if fork and previous != line.session else None,
        )
        if line.session:
            self._set_main(line.session)
        first: list[Item] = []
        if not self._created or previous != line.session:
            self._created = True
            first.append(SessionResumed(session_id="", record=record) if line.resumed else _created(record))
        # the Session expects a record as the first item of the first message
        return [*first, ModeUpdate(mode_id=line.mode or None, model=line.model or None)]

    def _take_pending_fork(self) -> bool:
        return any(p.command.type == "fork" for p in self._pending)

    # ------------------------------------------------------------ replies

    def _reply(self, session: str) -> _Reply:
        reply = self._replies.get(session)
        if reply is None:
            self._n_replies += 1
            n = self._n_replies
            reply = _Reply(message_id=f"{session}/reply-{n}", reasoning_id=f"{session}/reasoning-{n}")
            self._replies[session] = reply
        return reply

    def _message_start(self, line: _Line, sub: str | None) -> list[Item]:
        self._replies.pop(line.session, None)
        self._reply(line.session)
        # no id, no content: nothing to translate until text or a call streams
        return [Passthrough(method=line.type)]

    def _tool_start(self, line: _Line, sub: str | None) -> list[Item]:
        # the call has no id before its tool_call: kept as is
        return [Passthrough(method=line.type)]

    # The deltas are most of a stream's lines: the look-up of _reply is written out in them.

    def _text_delta(self, line: _Line, sub: str | None) -> list[Item]:
        reply = self._replies.get(line.session) or self._reply(line.session)
        body = AssistantDelta(message_id=reply.message_id, text=line.text or "")
        return [on_thread(body, sub)]

    def _thinking_delta(self, line: _Line, sub: str | None) -> list[Item]:
        reply = self._replies.get(line.session) or self._reply(line.session)
        text = line.text or ""
        reply.size += len(text)
        body = ReasoningDelta(reasoning_id=reply.reasoning_id, text=text)
        out: list[Item] = [on_thread(body, sub)]
        if reply.size <= BUFFER_TEXT:
            reply.thinking.append(text)
        elif reply.size - len(text) <= BUFFER_TEXT:  # the limit is crossed now: said once
            out.append(buffer_warning("reasoning", reply.reasoning_id))
        return out

    def _message_end(self, line: _Line, sub: str | None) -> list[Item]:
        if line.role == "user":
            return self._user_message(line, sub)
        if line.role == "assistant":
            return self._assistant_message(line, sub)
        # role "tool": the results were each reported by their tool_result
        return [Passthrough(method=line.type)]

    def _assistant_message(self, line: _Line, sub: str | None) -> list[Item]:
        reply = self._replies.pop(line.session, None) or self._reply(line.session)
        self._replies.pop(line.session, None)
        out: list[Item] = []
        if reply.thinking:
            body = Reasoning(reasoning_id=reply.reasoning_id, redacted=False, summary="".join(reply.thinking))
            out.append(on_thread(body, sub))
        text = line.text or ""
        if text:
            out.append(on_thread(AssistantMessage(message_id=reply.message_id, text=text), sub))
            if sub is not None:
                self._subs[sub].last_text = text
            elif self._turn is not None:
                self._turn.text = text
        if not out:
            out.append(Passthrough(method=line.type))  # a reply that only made tool calls
        return out

    def _user_message(self, line: _Line, sub: str | None) -> list[Item]:
        text = line.text or ""
        images = [_image(i) for i in line.images] if line.images else None
        if sub is not None:
            self._n_users += 1
            mid = f"{sub}/user-{self._n_users}"
            return [Emit(body=UserMessage(message_id=mid, text=text, images=images), subagent_id=sub)]
        out: list[Item] = []
        known = self._match_queued(text)
        if known is None:
            self._n_users += 1
            mid, queued = f"{line.session}/user-{self._n_users}", False
            out.append(MessageAccepted(session_id="", message_id=mid))
        else:
            mid, queued = known
        if self._turn is None:
            self._turn = _Turn()
            out.append(TurnStart())
        self._turn.messages.append(mid)
        out.append(UserMessage(message_id=mid, text=text, images=images, queued=True if queued else None))
        out.append(MessageStarted(session_id="", message_id=mid))
        return out

    def _match_queued(self, text: str) -> tuple[str, bool] | None:
        for i, (mid, sent, queued) in enumerate(self._queued):
            if sent == text:
                del self._queued[i]
                return mid, queued
        return None

    # ------------------------------------------------------------ tool calls

    def _tool_call(self, line: _Line, sub: str | None) -> list[Item]:
        call_id = line.call_id or ""
        tool = line.tool or ""
        inp = _raw_or_none(line.input)
        view = _tool_input(inp)
        path = view.path if view else None
        if tool == AGENT_TOOL:
            self._unlinked_agents.append((call_id, inp))
            if len(self._unlinked_agents) > OPEN_ITEMS:  # the call stays open: only the link is lost
                del self._unlinked_agents[0]
        body = ToolCall(
            call_id=call_id,
            tool=tool,
            phase="started",
            title=line.summary,
            category=TOOL_CATEGORIES.get(tool, "other"),
            locations=[Location(path=path)] if path else None,
            input=inp,
        )
        self._last_call[line.session] = body
        return [Emit(body=body, subagent_id=sub, note=_Note(inp, path))]

    def _ref(self, call_id: str, line: _Line) -> ToolCallRef:
        call = self.calls.get(call_id)
        last = self._last_call.get(line.session)
        if call is not None:
            note: _Note = call.note
            tool, title, inp, category = call.tool, call.title, note.input, call.category
        elif last is not None and last.call_id == call_id:
            # not open (its result came first): the tool_call line just before names it
            tool, title, inp, category = last.tool, last.title, last.input, last.category
        else:
            tool = line.tool or ""
            return ToolCallRef(
                call_id=call_id, tool=tool, title=line.summary or tool, category=TOOL_CATEGORIES.get(tool, "other")
            )
        title = title or line.summary or tool
        return ToolCallRef(call_id=call_id, tool=tool, title=title, input=inp, category=category)

    def _approval_needed(self, line: _Line, sub: str | None) -> list[Item]:
        call_id = line.call_id or ""
        self._requests[call_id] = sub
        detail = PermissionDetail(command=line.command, reason=line.reason, paths=line.paths or None)
        ref = self._ref(call_id, line)
        category = APPROVAL_CATEGORIES.get(line.category or "")
        if category is not None:  # what the mode asks about: rm is a delete, curl a fetch
            ref = structs.replace(ref, category=category)
        body = PermissionRequest(
            request_id=call_id,
            tool_call=ref,
            options=list(PERMISSION_OPTIONS),
            detail=detail if (line.command or line.reason or line.paths) else None,
        )
        return [on_thread(body, sub)]

    def _approval(self, line: _Line, sub: str | None) -> list[Item]:
        call_id = line.call_id or ""
        allow = bool(line.allow)
        call = self.calls.get(call_id)
        if call is not None and not allow:
            call.note.refused = True
        asked = self._requests.pop(call_id, "none") != "none"
        sent = self._approves.pop(call_id, None)
        out: list[Item] = []
        if sent is not None:
            option = (ALLOW_SESSION if sent.for_session else ALLOW) if sent.allow else REJECT
            answer: dict[str, Any] = {"optionId": option, "allow": bool(sent.allow)}
            if sent.for_session is not None:
                answer["forSession"] = sent.for_session
            if sent.note is not None:
                answer["note"] = sent.note
            edits = _raw_or_none(sent.edits)
            if edits is not None:
                answer["edits"] = edits
            resolved = RequestResolved(request_id=call_id, outcome="answered", answer=answer, option_id=option)
            out.append(on_thread(resolved, sub))
            return out
        if not self._aborting:
            # decided without anyone answering: --approve edits/all, -p, or a for_session grant
            auto = PermissionAuto(tool_call=self._ref(call_id, line), option_id=ALLOW if allow else REJECT)
            out.append(on_thread(auto, sub))
        if asked:
            out.append(on_thread(RequestResolved(request_id=call_id, outcome="cancelled"), sub))
        if not out:
            out.append(Passthrough(method=line.type))
        return out

    def _blocked(self, line: _Line, sub: str | None) -> list[Item]:
        last = self._last_call.get(line.session)
        call = self.calls.get(last.call_id) if last is not None and last.call_id else None
        if call is None or (line.tool and call.tool != line.tool):
            msg = f"guard.yaml refused a {line.tool or 'tool'} call: {line.reason or ''}".rstrip(": ")
            return [on_thread(Warning(message=msg, source="guard"), sub)]
        call.note.refused = True
        auto = PermissionAuto(tool_call=self._ref(call.call_id, line), option_id=REJECT, reason=line.reason)
        return [on_thread(auto, sub)]

    def _question(self, line: _Line, sub: str | None) -> list[Item]:
        call_id = line.call_id or ""
        self._requests[call_id] = sub
        question = Question(id=call_id, prompt=line.text or "", multi_select=False, allow_free_text=True, options=[])
        return [on_thread(UserQuestion(request_id=call_id, blocking=True, questions=[question]), sub)]

    def _tool_result(self, line: _Line, sub: str | None) -> list[Item]:
        call_id = line.call_id or ""
        out: list[Item] = []
        if call_id in self._requests:
            # a question nobody answered (-p, abort) or an approval never decided
            self._requests.pop(call_id)
            out.append(on_thread(RequestResolved(request_id=call_id, outcome="cancelled"), sub))
        call = self.calls.get(call_id)
        text = line.text or ""
        failed = bool(line.is_error)
        if call is not None and not call.note.refused:
            if call.tool in SHELL_TOOLS and text:
                out.append(on_thread(CommandOutput(call_id=call_id, stream="merged", delta=text), sub))
            if not failed:
                diff = self._file_diff(call_id, call.category, call.note)
                if diff is not None:
                    out.append(on_thread(diff, sub))
        output: Any = text
        if line.images:
            output = {"text": text, "images": [_image(i) for i in line.images]}
        phase: Literal["completed", "failed"] = "failed" if failed else "completed"
        if call is not None:
            # named by its id only: the core repeats the tool, title and category of its start
            body = ToolCall(call_id=call_id, tool="", phase=phase, output=output)
        else:  # a call never seen: what the result line says (a tool named "" is "unknown")
            tool = line.tool or ""
            body = ToolCall(
                call_id=call_id, tool=tool, phase=phase, category=TOOL_CATEGORIES.get(tool, "other"), output=output
            )
        out.append(on_thread(body, sub))
        return out

    @staticmethod
    def _file_diff(call_id: str, category: Category | None, note: _Note) -> FileDiff | None:
        if category != "edit" or not note.path:
            return None
        view = _tool_input(note.input)
        if view is None:
            return None
        if view.old_text is not None and view.new_text is not None:
            diff = _diff(note.path, view.old_text, view.new_text)
            return FileDiff(path=note.path, diff=diff, call_id=call_id, change_kind="update")
        if view.content is not None:
            # the old content is not in the stream: the diff shows the whole new content
            diff = _diff(note.path, "", view.content)
            return FileDiff(path=note.path, diff=diff, call_id=call_id, change_kind="write")
        return None

    # ------------------------------------------------------------ usage, notices, compaction

    def _usage(self, line: _Line, sub: str | None) -> list[Item]:
        try:
            tokens_in = _int_decoder.decode(line.input) if bytes(line.input) else 0
        except msgspec.DecodeError:
            raise MalformedMessage("hm usage line whose input is not a token count") from None
        u = _Usage(
            input=tokens_in,
            output=line.output or 0,
            cache_read=line.cache_read or 0,
            cache_write=line.cache_write or 0,
            cost=line.cost or 0.0,
        )
        if sub is None and self._turn is not None:
            t = self._turn
            t.input += u.input
            t.output += u.output
            t.cache_read += u.cache_read
            t.cache_write += u.cache_write
            t.cost += u.cost
            t.calls += 1
        return [on_thread(Usage(tokens=_tokens(u), cost=_cost(u.cost), scope="call"), sub)]

    def _retry(self, line: _Line, sub: str | None) -> list[Item]:
        return [on_thread(Warning(message=line.text or "retrying", source="retry"), sub)]

    def _warning(self, line: _Line, sub: str | None) -> list[Item]:
        text = line.text or ""
        out: list[Item] = [on_thread(Warning(message=text, source="agent"), sub)]
        if _NO_VISION in text:  # the model has no vision: hm sends a placeholder for every image (doc)
            out.append(ContextDegraded(session_id="", dropped=[ContextDrop(what="image", reason=text)]))
        return out

    def _error(self, line: _Line, sub: str | None) -> list[Item]:
        body = Error(message=line.text or "error", error_type="agent", recoverable=True)
        return [on_thread(body, sub)]

    def _compaction_start(self, line: _Line, sub: str | None) -> list[Item]:
        self._n_compactions += 1
        cid = f"{line.session}/compaction-{self._n_compactions}"
        self._compaction[line.session] = cid
        return [on_thread(Compaction(compaction_id=cid, status="in_progress"), sub)]

    def _compaction_end(self, line: _Line, sub: str | None) -> list[Item]:
        cid = self._compaction.pop(line.session, None)
        if cid is None:
            self._n_compactions += 1
            cid = f"{line.session}/compaction-{self._n_compactions}"
        if line.text:
            body = Compaction(compaction_id=cid, status="completed", summary=line.text)
        else:
            body = Compaction(compaction_id=cid, status="failed")
        return [on_thread(body, sub)]

    # ------------------------------------------------------------ ends

    def _subagent_end(self, line: _Line, sub: str | None) -> list[Item]:
        sid = sub or line.session
        info = self._subs.setdefault(sid, _Sub(call_id=None))
        phase: Literal["completed", "failed", "cancelled"]
        result: Any
        if not line.error:
            phase, result = "completed", info.last_text
        else:
            phase = "cancelled" if line.error == ABORTED else "failed"
            result = {"error": line.error}
        return [Subagent(subagent_id=sid, phase=phase, result=result, call_id=info.call_id)]

    def _turn_end(self, line: _Line, sub: str | None) -> list[Item]:
        if sub is not None:
            return [Passthrough(method=line.type)]  # sub-agents end with subagent_end
        self._aborting = False
        if line.error:
            stop: Literal["cancelled", "error"] = "cancelled" if line.error == ABORTED else "error"
            out = self._complete_messages(stop, ErrorInfo(message=line.error))
        else:
            out = self._complete_messages("end_turn", None)
        self._turn = None
        reason: Literal["ok", "interrupt"] = "interrupt" if line.error else "ok"
        out.append(TurnComplete(reason=reason, stop_reason=line.error))
        return out

    def _complete_messages(
        self, stop: Literal["end_turn", "cancelled", "error"], error: ErrorInfo | None
    ) -> list[Item]:
        """message.completed for every message of the open turn: its last reply and usage."""
        turn = self._turn
        if turn is None:
            return []
        usage = None
        if turn.calls:
            tokens = Tokens(
                input=turn.input,
                output=turn.output,
                total=turn.input + turn.output,
                cache_read=turn.cache_read,
                cache_write=turn.cache_write,
            )
            usage = CompletionUsage(tokens=tokens, cost=_cost(round(turn.cost, 9)))
        result = Completion(stop_reason=stop, text=turn.text, usage=usage, error=error)
        return [MessageCompleted(session_id="", message_id=mid, result=result) for mid in turn.messages]

    def _session_end(self, line: _Line, sub: str | None) -> list[Item]:
        self._ended = True
        out: list[Item] = []
        if self._turn is not None:
            # ended without turn_end (interrupted): the turn ends with the session
            err = ErrorInfo(message=f"the session ended (exit code {line.exit_code})")
            out.extend(self._complete_messages("cancelled", err))
            self._turn = None
            out.append(TurnComplete(reason="interrupt", stop_reason="session_end"))
        if line.usage is not None:
            u = line.usage
            out.append(Usage(tokens=_tokens(u), cost=_cost(u.cost), scope="session"))
        if line.refused:
            names = ", ".join(line.refused)
            n = len(line.refused)
            msg = f"{n} call{'s' if n != 1 else ''} refused for want of approval: {names}"
            out.append(Warning(message=msg, source="agent"))
        code = line.exit_code
        if code == 1:
            out.append(SessionFailed(session_id="", error=ErrorInfo(message="the agent failed", error_type="exit-1")))
        elif code == 130:
            out.append(Warning(message="hm was interrupted (exit code 130)", source="agent"))
        if not out:
            out.append(Passthrough(method=line.type))
        return out

    # ------------------------------------------------------------ RPC

    def _command(self, message: bytes) -> list[Item]:
        try:
            cmd = _command_decoder.decode(message)
        except msgspec.DecodeError as exc:
            # hm answers it with ok:false and id null; the line itself is bad input
            raise MalformedMessage(f"not an hm RPC command: {exc}") from None
        self._n_commands += 1
        key = self._key(cmd.id)
        mid = None
        if cmd.type in MESSAGE_COMMANDS:
            mid = self._message_id(cmd.id, key)
        self._pending.append(_Pending(key=key, command=cmd, message_id=mid))
        out: list[Item] = [Source(method=cmd.type or None), Passthrough(method=cmd.type or None)]
        if len(self._pending) > PENDING_REQUESTS:
            old = self._pending.pop(0)
            text = f"command {old.key} forgotten: more than {PENDING_REQUESTS} unanswered"
            warn = Warning(message=text, source="normalize")
            out.append(Emit(body=warn, synthetic=True))
        if cmd.type == "approve" and cmd.call_id:
            self._approves[cmd.call_id] = cmd
        elif cmd.type == "abort":
            self._aborting = True
        return out

    @staticmethod
    def _key(raw: Raw) -> str | None:
        data = bytes(raw)
        if not data:
            return None
        try:
            return _encoder.encode(_any_decoder.decode(data)).decode()
        except msgspec.DecodeError:
            return data.decode("utf-8", errors="replace")

    def _message_id(self, raw: Raw, key: str | None) -> str:
        """A prompt's message id: from its command id when that is usable, else its position."""
        if key is not None:
            value = _any_decoder.decode(bytes(raw))
            name = value if isinstance(value, str) else key
            mid = f"cmd-{name}"
            if mid not in self._used_ids:
                self._used_ids.add(mid)
                return mid
        mid = f"cmd#{self._n_commands}"
        self._used_ids.add(mid)
        return mid

    def _match_pending(self, line: _Line) -> _Pending | None:
        key = self._key(line.id)
        if key is None:
            # no id: the oldest id-less command of that name
            for i, p in enumerate(self._pending):
                if p.key is None and p.command.type == line.command:
                    return self._pending.pop(i)
            return None
        for i, p in enumerate(self._pending):
            if p.key == key:
                return self._pending.pop(i)
        return None

    def _response(self, line: _Line, sub: str | None) -> list[Item]:
        pending = self._match_pending(line)
        command = line.command or (pending.command.type if pending else "")
        if line.ok is False:
            if pending is not None and pending.command.type == "abort":
                self._aborting = False
            if pending is not None and pending.command.type == "approve" and pending.command.call_id:
                self._approves.pop(pending.command.call_id, None)
            what = command or "a command"
            msg = f"{what} refused: {line.error or 'no reason given'}"
            return [Error(message=msg, error_type="command-refused", recoverable=True)]
        handler = self._responses.get(command)
        out = handler(line, pending) if handler is not None else []
        return out or [Passthrough(method=line.type)]

    def _accepted(self, line: _Line, pending: _Pending | None) -> list[Item]:
        if pending is None or pending.message_id is None:
            return []
        cmd = pending.command
        self._queued.append((pending.message_id, cmd.text or "", cmd.type == "follow_up"))
        out: list[Item] = [MessageAccepted(session_id="", message_id=pending.message_id)]
        if len(self._queued) > OPEN_ITEMS:
            old = self._queued.pop(0)[0]
            warn = Warning(
                message=f"accepted message {old} forgotten: more than {OPEN_ITEMS} waiting", source="normalize"
            )
            out.append(Emit(body=warn, synthetic=True))
        return out

    def _answered(self, line: _Line, pending: _Pending | None) -> list[Item]:
        if pending is None or not pending.command.call_id:
            return []
        call_id = pending.command.call_id
        sub = self._requests.pop(call_id, None)
        body = RequestResolved(request_id=call_id, outcome="answered", answer={"text": pending.command.text or ""})
        return [on_thread(body, sub)]

    def _aborted(self, line: _Line, pending: _Pending | None) -> list[Item]:
        # queued messages are dropped (rpc.md): they end without having started
        err = ErrorInfo(message="dropped by abort")
        dropped = [mid for mid, _text, _q in self._queued]
        self._queued.clear()
        return [
            MessageCompleted(session_id="", message_id=mid, result=Completion(stop_reason="cancelled", error=err))
            for mid in dropped
        ]

    def _mode_set(self, line: _Line, pending: _Pending | None) -> list[Item]:
        if pending is None or not pending.command.mode:
            return []
        mode = pending.command.mode
        # the mode decides which calls need approval; both apply from the next turn
        return [ModeUpdate(mode_id=mode), PermissionsUpdate(spec={"mode": mode}, applied="next-turn")]

    def _model_set(self, line: _Line, pending: _Pending | None) -> list[Item]:
        if pending is None or not pending.command.model:
            return []  # provider or effort only: no model name to report
        return [ModeUpdate(model=pending.command.model)]

    def _state(self, line: _Line, pending: _Pending | None) -> list[Item]:
        data = _raw_or_none(line.data)
        if data is None:
            return []
        try:
            state = _state_decoder.decode(data)
        except msgspec.DecodeError:
            return []
        return self._session_data(state.session)

    def _forked(self, line: _Line, pending: _Pending | None) -> list[Item]:
        data = _raw_or_none(line.data)
        if data is None:
            return []
        try:
            s = _session_data_decoder.decode(data)
        except msgspec.DecodeError:
            return []
        # the fork's record came with its session_start; its usage starts again from 0
        return [SessionInfo(title=s.title, cwd=s.root, model=s.model or None)]

    @staticmethod
    def _session_data(s: _SessionData | None) -> list[Item]:
        if s is None:
            return []
        out: list[Item] = [SessionInfo(title=s.title, cwd=s.root, model=s.model or None)]
        if s.usage is not None or s.context is not None:
            u = s.usage
            out.append(
                Usage(
                    context=ContextWindow(used=s.context) if s.context is not None else None,
                    tokens=_tokens(u) if u else None,
                    cost=_cost(u.cost) if u else None,
                    scope="session",
                )
            )
        return out


def _created(record: SessionRecord) -> SessionCreated:
    return SessionCreated(session_id="", record=record)
