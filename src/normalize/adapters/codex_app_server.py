"""The ``codex-app-server`` adapter: ``codex app-server`` JSON-RPC (v2) on stdio.

Facts (codex-cli 0.169.0 captures unless marked otherwise):

* JSON-RPC "lite": no ``"jsonrpc"`` key in either direction.  A line is a
  request (``method`` + ``id``), a notification (``method``, no ``id``) or a
  response (``id`` + ``result`` | ``error``).  Server-to-client request ids are
  their own counter starting at 0 and collide with the client's ids: pending
  requests are keyed by (direction, id).
* Every server notification carries a top-level ``emittedAtMs`` (Unix ms) beside
  ``params``; responses and server requests have none (the capture time is used).
* ``thread/start``'s response comes before ``thread/started``; the turn id is
  first known from ``turn/start``'s response, then ``turn/started`` (0.107 may send
  the prompt's ``item/started`` and ``item/completed`` before it: the first item
  naming a turn starts it).
* ``item/started`` / deltas / ``item/completed``; the completed item is the
  truth.  ``item/commandExecution/outputDelta`` is lossy: the first chunk of a
  command's output was missing from the deltas but present in
  ``aggregatedOutput``.
* ``turn/completed``'s ``turn.items`` is not the item list (only the final
  agentMessage on success, ``[]`` on failure or interrupt).  An item in flight
  at ``turn/interrupt`` never gets ``item/completed``.
* ``error`` with ``willRetry: true`` is a retry notice ("Reconnecting... 1/1"),
  a ``warning`` here; the terminal one (``willRetry: false``) precedes
  ``turn/completed`` with ``status: "failed"`` whose ``turn.error`` repeats it.  ``codexErrorInfo`` is a
  bare string or a one-key object.
* ``thread/tokenUsage/updated``: ``total`` is cumulative for the thread, ``last``
  the last model request; sent after every model response, repeated unchanged.
  On context-window overflow both read ``totalTokens = modelContextWindow`` with
  every other count 0.
* ``turn/diff/updated``: the whole turn's ``git diff``, re-sent identical several
  times; per turn, not cumulative.
* ``account/rateLimits/updated`` after every model stream (all null for a
  non-OpenAI provider).
* Approvals: ``availableDecisions`` leaves out ``decline`` yet ``decline`` is
  accepted (the item completes ``declined``).  ``item/fileChange/requestApproval``
  has no diff: the changes are in the preceding ``item/started``.
  ``serverRequest/resolved`` follows each answer.
* A sub-agent's end: said from 0.150 on, and only a completion (``subAgentActivity``
  of kind ``completed`` right after the sub-agent thread's ``turn/completed``); 0.96 and
  0.107 say it in a later ``wait``'s ``agentsStates``, 0.125 to 0.142 never.  The end left
  unsaid is inferred on a connection (:meth:`CodexAppServerAdapter.spawned_turn_ended`).
  A follow-up that runs a sub-agent again is said by nothing but the sub-agent's thread:
  ``resumed`` there (:meth:`CodexAppServerAdapter.spawned_turn_started`), and its end again.
* Casing: camelCase keys and enum values, but ``text_elements``, ``move_path``
  and ``agentMessage.phase`` values (``final_answer``) are snake_case.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, Literal

import msgspec
from msgspec import Raw

from normalize import (
    AccountAvailable,
    AccountExhausted,
    AssistantDelta,
    AssistantMessage,
    Body,
    CommandOutput,
    Compaction,
    Completion,
    CompletionUsage,
    ContextApplied,
    ContextDegraded,
    ContextDrop,
    ContextUpdated,
    ContextWindow,
    Direction,
    Emit,
    Error,
    ErrorInfo,
    FileDiff,
    Image,
    Item,
    MalformedMessage,
    McpTool,
    MessageAccepted,
    MessageCompleted,
    MessageStarted,
    ModeUpdate,
    Passthrough,
    PermissionDetail,
    PermissionOption,
    PermissionRequest,
    PermissionsUpdate,
    Plan,
    PlanEntry,
    Question,
    QuestionOption,
    ReasoningDelta,
    RequestResolved,
    Routing,
    Sample,
    SessionCreated,
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
    UserQuestion,
    tokens_since,
)
from normalize import (
    Warning as WarningBody,
)
from normalize.adapters import _codex_items as ci
from normalize.adapters._limits import (
    NO_RECENT,
    NO_TABLE,
    OPEN_CALLS,
    PENDING_REQUESTS,
    Bounded,
    Recent,
    put,
    recent,
    table,
)
from normalize.adapters._times import ms_time, s_time

from ._base import BuiltinAdapter, version_tuple
from ._codex_app_server_views import (
    _ANY,
    _COLLAB,
    _COMMAND,
    _COMMAND_APPROVAL,
    _COMPACTED,
    _DECISION,
    _DELTA,
    _DIFF,
    _ELICITATION,
    _ENVELOPE,
    _ERROR,
    _FILE_APPROVAL,
    _FILE_CHANGE,
    _GENERIC_TOOL,
    _IMAGE_VIEW,
    _INITIALIZE,
    _ITEM_HEAD,
    _ITEM_PARAMS,
    _LIMIT_STATE,
    _MCP,
    _MCP_STARTUP,
    _NOTICE,
    _PERMISSIONS_APPROVAL,
    _PLAN,
    _PROGRESS,
    _RATE_LIMITS,
    _REASONING,
    _REROUTED,
    _RESOLVED,
    _RPC_ERROR,
    _SUB_AGENT,
    _TEXT_ITEM,
    _THREAD_NAME,
    _THREAD_PARAMS,
    _THREAD_RESULT,
    _TOKEN_USAGE,
    _TOOL_CALL_REQUEST,
    _TOOL_CALL_RESULT,
    _TURN,
    _TURN_PARAMS,
    _TURN_RESULT,
    _USER_INPUT_REQUEST,
    _USER_MESSAGE,
    _WARNING,
    _WEB_SEARCH,
    _Breakdown,
    _ChangeView,
    _CompactedParams,
    _DeltaParams,
    _DiffParams,
    _Envelope,
    _ErrorParams,
    _ItemParams,
    _McpStartupParams,
    _notice,
    _PlanParams,
    _ProgressParams,
    _RateLimitsParams,
    _ReroutedParams,
    _ResolvedParams,
    _Thread,
    _ThreadNameParams,
    _ThreadParams,
    _ThreadResult,
    _TokenUsage,
    _TokenUsageParams,
    _Turn,
    _TurnError,
    _TurnParams,
    _WarningParams,
)

__all__ = ["CodexAppServerAdapter"]


# ----------------------------------------------------------------- params


def _tokens(b: _Breakdown) -> Tokens:
    return ci.tokens(
        input=b.input_tokens,
        output=b.output_tokens,
        total=b.total_tokens,
        cached=b.cached_input_tokens,
        cache_write=b.cache_write_input_tokens,
        reasoning=b.reasoning_output_tokens,
    )


def _is_overflow_marker(u: _TokenUsage) -> bool:
    """Context-window overflow: every count 0 but ``totalTokens`` (= the window)."""
    t = u.total
    return bool(t.total_tokens) and not t.input_tokens and not t.output_tokens


def _changes(views: Sequence[_ChangeView]) -> list[ci.Change]:
    return [ci.Change(path=c.path, kind=c.kind.type, diff=c.diff, move_path=c.kind.move_path) for c in views]


def _error_text(err: _TurnError) -> str:
    if err.additional_details and err.additional_details not in err.message:
        return f"{err.message}: {err.additional_details}"
    return err.message


def _split_git_diff(diff: str) -> list[tuple[str, str, str]]:
    """A ``git diff`` as (path, section, change kind) per file."""
    out: list[tuple[str, str, str]] = []
    for chunk in diff.split("diff --git ")[1:]:
        section = "diff --git " + chunk
        header = chunk.split("\n", 1)[0]
        path = header.rsplit(" b/", 1)[-1] if " b/" in header else header
        if "\nnew file mode" in section:
            kind = "add"
        elif "\ndeleted file mode" in section:
            kind = "delete"
        elif "\nrename from" in section:
            kind = "move"
        else:
            kind = "update"
        out.append((path, section, kind))
    return out


# Approval decisions -> permission option kinds (ACP's vocabulary).
_DECISION_KIND: Final = {
    "accept": "allow_once",
    "acceptForSession": "allow_always",
    "acceptWithExecpolicyAmendment": "allow_always",
    "applyNetworkPolicyAmendment": "allow_always",
    "decline": "reject_once",
    "cancel": "reject_once",
}
_DECISION_LABEL: Final = {
    "accept": "Allow",
    "acceptForSession": "Allow for this session",
    "acceptWithExecpolicyAmendment": "Always allow this command",
    "applyNetworkPolicyAmendment": "Allow this network access",
    "decline": "Decline",
    "cancel": "Decline and stop the turn",
}
_DEFAULT_DECISIONS: Final = ("accept", "acceptForSession", "decline", "cancel")


def _option(name: str) -> PermissionOption:
    return PermissionOption(id=name, kind=_DECISION_KIND.get(name, "other"), label=_DECISION_LABEL.get(name, name))


def _decision_name(raw: Raw) -> str:
    value = _ANY.decode(raw)
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        return str(next(iter(value)))
    return "other"


def _grants(raw: Raw) -> bool:
    """Whether a permissions answer grants anything (``{}`` or only nulls grants nothing: a refusal)."""
    value = _ANY.decode(raw) if ci.present(raw) else None
    return isinstance(value, dict) and any(v not in (None, {}, []) for v in value.values())


# ----------------------------------------------------------------- state


class _Open:
    """An item that is not a tool call, between item/started and item/completed: a text
    being streamed (agent message, plan, reasoning), a user message, a web search, a
    compaction.  The core keeps no table of these (tool calls are in ``Adapter.calls``)."""

    __slots__ = ("kind", "text", "view")

    def __init__(self, kind: str, view: Any) -> None:
        self.kind = kind
        self.view = view
        self.text: list[str] = []


class _Note:
    """What a tool call's ``item/started`` attaches to the call in the core's table
    (``Emit(note=...)``, read back from ``Adapter.calls``): the item as it started, and
    what came since (output deltas seen, diffs reported).  Its end repeats them."""

    __slots__ = ("kind", "seen", "streamed", "view")

    def __init__(self, kind: str, view: Raw) -> None:
        self.kind = kind
        self.view = view
        self.streamed = False
        self.seen: set[tuple[str, str]] = set()


class _Pending:
    """A request waiting for its response."""

    __slots__ = ("call_id", "method", "request_id")

    def __init__(self, method: str, request_id: str = "", call_id: str = "") -> None:
        self.method = method
        self.request_id = request_id
        self.call_id = call_id


#: a notification's params' view, the whole notification's view, the handler of the first
_Reader = tuple[
    msgspec.json.Decoder[Any], msgspec.json.Decoder[Any], Callable[["CodexAppServerAdapter", Any], list[Item]]
]
_ResponseHandler = Callable[["CodexAppServerAdapter", "_Pending", Raw], list[Item]]
_ItemHandler = Callable[["CodexAppServerAdapter", Raw, "_Note | None"], list[Body]]

#: Keep the message as is: one shared value (frozen; the core reads it).
_PASS: Final = Passthrough()

_StopReason = Literal["end_turn", "cancelled", "error"]
_TERMINAL_STATUS: Final[dict[str, tuple[Literal["ok", "interrupt"], _StopReason]]] = {
    "completed": ("ok", "end_turn"),
    "interrupted": ("interrupt", "cancelled"),
    # a failed turn did not complete normally: reason "interrupt", stopReason "failed"
    "failed": ("interrupt", "error"),
}


class CodexAppServerAdapter(BuiltinAdapter):
    protocol = "codex-app-server"
    routing = Routing(
        key="threadId",
        opened_by={"thread/start": ("thread", "id"), "thread/fork": ("thread", "id")},
        named_in={"thread/started": ("thread", "id")},
        # 0.142 says a spawn only in item/completed, after the sub-agent's thread spoke; 0.96
        # only in the spawnAgent collabAgentToolCall's receiverThreadIds (its sub-agent's
        # thread is never started by a thread/started)
        spawned_in={
            "item/started": ("item", "agentThreadId"),
            "item/completed": (("item", "agentThreadId"), ("item", "receiverThreadIds")),
        },
        handshake="initialize",
    )
    announces_session = True
    takes_methods = True
    agent = "codex"

    def __init__(self) -> None:
        super().__init__()
        #: a notification and its method, as the Connection that routed it read them (given)
        self._given: tuple[bytes, str] | None = None
        # The tables below are made at their first entry and given back once empty (NO_TABLE:
        # a connection keeps every thread it opened, most of them idle).
        #: the requests awaiting their response
        self._pending: Bounded[tuple[Direction, int | str], _Pending] = NO_TABLE
        #: requests the client answered, until the server says them resolved (a shared empty
        #: set until the first answer: most sessions ask nothing)
        self._answered: Recent = NO_RECENT
        #: items that are not tool calls, while open (the tool calls are in ``self.calls``)
        self._open: Bounded[str, _Open] = NO_TABLE
        #: sub-agent threads this thread spawned -> the spawning call ("" once it runs again on
        #: a follow-up: its ends then name no call), while they run
        self._subagents: Bounded[str, str] = NO_TABLE
        #: sub-agents that ended (one may run again: a follow-up), and those that did (their
        #: ``task``, the spawn's, ended with the first run: a later end is the sub-agent's alone)
        self._ended_subagents: Recent = NO_RECENT
        self._reruns: Recent = NO_RECENT
        #: whether Codex said a sub-agent's completion itself (then a completion is never
        #: inferred), and the sub-agents whose end was inferred (a notice of Codex's own
        #: about one of them, if one comes after, is not said again)
        self._says_subagent_end = False
        self._inferred_ends: Recent = NO_RECENT
        self._threads: Recent = Recent()
        #: items completed ``declined`` (0.77 completes a declined command a second time)
        self._declined: Recent = NO_RECENT
        self._version: str | None = None
        self._thread_version: str | None = None  # the version the thread's object says
        #: the model ``thread/start``'s response names, for the ``thread/started`` after it (its
        #: thread names none up to 0.169)
        self._start_model: str | None = None
        # the running turn
        self._turn_id: str | None = None
        self._ended_turn: str | None = None  # the native id of the last turn completed
        self._turn_error = False
        self._turn_text: str | None = None
        self._turn_base: _Breakdown | None = None
        #: an item other than the prompt completed in the running turn (the model answered)
        self._turn_answered = False
        #: a resumed thread whose totals were not said yet: 0.120 says them again in the first
        #: turn, before the model answers (0.142 and later before the turn starts)
        self._restoring = False
        self._diffs: dict[str, str] = {}
        # cumulative snapshots, to report changes only
        self._totals: _Breakdown | None = None
        self._usage: _TokenUsage | None = None  # the last snapshot (frozen: compared by value)
        self._rate_limits: bytes | None = None
        self._account: str | None = None  # the account, as the plan names it (account.*)
        self._exhausted = False  # a usage limit was reached and has not lifted

    # ------------------------------------------------------------ contract

    @classmethod
    def detect(cls, sample: Sequence[Sample]) -> float:
        for data, _ in sample:
            try:
                env = _ENVELOPE.decode(data)
            except msgspec.DecodeError:
                continue
            if b'"jsonrpc"' in data:
                return 0.0
            method = env.method or ""
            if method.startswith(("thread/", "turn/", "item/")) or method in _AGENT_NOTIFICATIONS:
                return 0.9
        return 0.0

    def feed(self, message: bytes, from_: Direction = "agent") -> list[Item]:
        self._check_open()
        given = self._given
        if given is not None:
            self._given = None
            if given[0] is message and from_ == "agent":  # its method read by the Connection
                out = self._one_pass(message, given[1])
                if out is not None:
                    return out
        try:  # (not UTF-8: the Session reports it before any adapter sees the line)
            env = _ENVELOPE.decode(message)
        except msgspec.DecodeError as exc:
            raise MalformedMessage(f"codex-app-server: not a JSON-RPC message: {exc}") from None
        try:
            return self._dispatch(env, from_)
        except msgspec.DecodeError as exc:
            raise MalformedMessage(f"codex-app-server: {env.method or 'response'}: {exc}") from None

    def given(self, message: bytes, view: object) -> None:
        if type(view) is str:
            self._given = (message, view)

    def _one_pass(self, message: bytes, method: str) -> list[Item] | None:
        """A notification of the agent's, its method known, decoded whole in one pass: the
        params' view and the time, in place of the envelope and then the params.  None when
        that view does not take it: it is then decoded as any message, and reported as
        before."""
        reader = _AGENT_NOTIFICATIONS.get(method)
        decoder = _NOTICE if reader is None else reader[1]
        try:
            msg = decoder.decode(message)
        except msgspec.DecodeError:
            return None
        out: list[Item]
        try:
            out = [_PASS] if reader is None else reader[2](self, msg.params)
        except msgspec.DecodeError as exc:
            raise MalformedMessage(f"codex-app-server: {method}: {exc}") from None
        ms = msg.emitted_at_ms
        out.insert(0, Source(method=method, ts=ms_time(ms) if ms is not None else None))
        return out

    def close(self) -> list[Item]:
        self._closed = True
        # tool calls and requests left open are settled by the core (docs/adapters.md); the
        # items the core does not see as calls (web searches, compactions) are reported here
        out: list[Item] = []
        for item_id, op in self._open.items():
            if op.kind in _NOT_CALLS:
                msg = f"codex {op.kind} {item_id} never completed: the stream ended first"
                out.append(Emit(body=WarningBody(message=msg, source="normalize"), synthetic=True))
        self._open = NO_TABLE
        self._pending = NO_TABLE
        return out

    # ------------------------------------------------------------ routing

    def _dispatch(self, env: _Envelope, from_: Direction) -> list[Item]:
        ms = env.emitted_at_ms
        ts = ms_time(ms) if ms is not None else None
        method = env.method
        rid = env.id
        out: list[Item]
        if method is not None:
            if from_ != "agent":
                if rid is not None:
                    put(self._pending_table(), ("client", rid), _Pending(method))
                out = [_PASS]  # the client's requests: their answers carry the meaning
            elif rid is not None:
                handler = _SERVER_REQUESTS.get(method)
                if handler is None:
                    put(self._pending_table(), ("agent", rid), _Pending(method, str(rid)))
                    out = [_PASS]
                else:
                    out = handler(self, env.params, rid)
            else:
                reader = _AGENT_NOTIFICATIONS.get(method)
                out = [_PASS] if reader is None else reader[2](self, reader[0].decode(env.params))
            # every handler returns a list of its own: the head goes in front of it (no copy)
            out.insert(0, Source(method=method, ts=ts))
            return out
        if rid is None:
            raise MalformedMessage("codex-app-server: a message with neither method nor id")
        # A response: to the other side's request.
        asker: Direction = "client" if from_ == "agent" else "agent"
        pending = self._pending.pop((asker, rid), None)
        if not self._pending:  # answered: a thread left waiting keeps no table of requests
            self._pending = NO_TABLE
        if pending is None:
            return [_PASS]
        if ci.present(env.error):
            out = self._error_response(pending, asker, env.error)
        else:
            respond = (_CLIENT_RESPONSES if asker == "agent" else _AGENT_RESPONSES).get(pending.method)
            out = [_PASS] if respond is None else respond(self, pending, env.result)
        out.insert(0, Source(method=pending.method, ts=ts))
        return out

    def _error_response(self, pending: _Pending, asker: Direction, raw: Raw) -> list[Item]:
        err = _RPC_ERROR.decode(raw)
        if asker == "agent":  # the client refused or failed to answer the server's request
            if pending.method == "item/tool/call":
                call = ToolCall(call_id=pending.call_id, tool="", phase="failed", output=err.message)
                return [call]
            self._answered = recent(self._answered)
            self._answered.add(pending.request_id)
            return [RequestResolved(request_id=pending.request_id, outcome="cancelled")]
        kind = f"jsonrpc {err.code}" if err.code is not None else "jsonrpc"
        return [Error(message=f"{pending.method}: {err.message}", error_type=kind, recoverable=True)]

    # ------------------------------------------------------------ session, threads

    def _record(self, thread: _Thread, model: str | None = None) -> SessionRecord:
        """The thread's record; ``model``: the one its opener's response names, for a
        thread object that does not (up to 0.169)."""
        self._thread_version = self._thread_version or thread.cli_version
        return SessionRecord(
            id="",
            agent="",
            protocol="",
            native_session_id=thread.id,
            title=thread.name,
            cwd=thread.cwd,
            model=thread.model or model,
            created_at=s_time(thread.created_at) if thread.created_at is not None else None,
            agent_version=thread.cli_version or self._version,
        )

    def _on_thread_started(self, params: _ThreadParams) -> list[Item]:
        thread = params.thread
        if thread.id in self._threads:
            return [SessionInfo(title=thread.name, cwd=thread.cwd, model=thread.model)]
        self._threads.add(thread.id)
        return [SessionCreated(session_id="", record=self._record(thread, self._start_model))]

    def _on_initialize(self, pending: _Pending, raw: Raw) -> list[Item]:
        ua = _INITIALIZE.decode(raw).user_agent or ""
        # "<originator>/<codex version> (<os>; <arch>) ..."
        first = ua.split(" ", 1)[0]
        if "/" in first:
            self._version = first.rsplit("/", 1)[1] or None
        return [Passthrough()]

    def _permissions(self, result: _ThreadResult) -> list[Item]:
        if not (ci.present(result.approval_policy) or ci.present(result.sandbox)):
            return []
        spec = {"approvalPolicy": result.approval_policy, "sandbox": result.sandbox}
        return [PermissionsUpdate(spec=spec, applied="now")]

    def _on_thread_start(self, pending: _Pending, raw: Raw) -> list[Item]:
        result = _THREAD_RESULT.decode(raw)
        self._start_model = result.model
        out = self._permissions(result)
        return out or [Passthrough()]

    def _on_thread_resume(self, pending: _Pending, raw: Raw) -> list[Item]:
        result = _THREAD_RESULT.decode(raw)
        out: list[Item] = []
        if result.thread is not None:
            thread = result.thread
            self._threads.add(thread.id)
            self._restoring = bool(thread.turns)
            out.append(SessionResumed(session_id="", record=self._record(thread, result.model)))
            for turn_raw in thread.turns:
                out.extend(self._replay_turn(_TURN.decode(turn_raw)))
        out.extend(self._permissions(result))
        return out or [Passthrough()]

    def _replay_turn(self, turn: _Turn) -> list[Item]:
        """A stored turn of ``thread/resume``'s history, as ``replay`` events."""
        bodies: list[Body] = [TurnStart()]
        for raw in turn.items:
            kind = _ITEM_HEAD.decode(raw).type
            completed = _ITEM_COMPLETED.get(kind)
            if completed is not None:
                bodies.extend(completed(self, raw, None))
        reason, _ = _TERMINAL_STATUS.get(turn.status, ("interrupt", "cancelled"))
        bodies.append(TurnComplete(reason=reason, stop_reason=turn.status, native_turn_id=turn.id))
        return [Emit(body=b, origin="replay") for b in bodies]

    # ------------------------------------------------------------ turns

    def _on_turn_start(self, pending: _Pending, raw: Raw) -> list[Item]:
        turn = _TURN_RESULT.decode(raw).turn
        return [MessageAccepted(session_id="", message_id=turn.id)]

    def _on_turn_started(self, params: _TurnParams) -> list[Item]:
        turn_id = params.turn.id
        if turn_id == self._turn_id:
            # 0.107 may say the turn's first item before turn/started: that item began it
            return [Passthrough()]
        return self._begin_turn(turn_id)

    def _begin_turn(self, turn_id: str) -> list[Item]:
        self._turn_id = turn_id
        self._turn_error = False
        self._turn_text = None
        self._turn_base = self._totals
        self._turn_answered = False
        self._diffs = {}
        return [TurnStart(), MessageStarted(session_id="", message_id=turn_id)]

    def _unannounced_turn(self, turn_id: str | None) -> list[Item]:
        """The start of a turn an item names before any ``turn/started`` did: 0.96 never
        announces a sub-agent thread's turns, its first item comes inside one (a late item
        of the turn just completed starts nothing)."""
        if turn_id is None or self._turn_id is not None or turn_id == self._ended_turn:
            return []
        return self._begin_turn(turn_id)

    def _on_turn_completed(self, params: _TurnParams) -> list[Item]:
        turn = params.turn
        out: list[Item] = []
        # Items in flight (an interrupt leaves them open) end with the turn: the tool calls
        # the core knows open (oldest first), then the other items.
        for known in self.calls:
            if isinstance(known.note, _Note):
                out.extend(_CALL_CLOSE[known.note.kind](self, known.call_id, known.note))
        for item_id, op in self._open.items():
            out.extend(_ITEM_CLOSE[op.kind](self, item_id, op))
        self._open = NO_TABLE
        reason, stop = _TERMINAL_STATUS.get(turn.status, ("interrupt", "cancelled"))
        error: ErrorInfo | None = None
        if turn.error is not None:
            error = ErrorInfo(message=turn.error.message, error_type=ci.error_type(turn.error.codex_error_info))
            if turn.status == "failed" and not self._turn_error:
                out.append(Error(message=_error_text(turn.error), error_type=error.error_type, recoverable=False))
        usage: CompletionUsage | None = None
        if self._totals is not None and self._totals != self._turn_base:
            tokens = tokens_since(_tokens(self._totals), _tokens(self._turn_base) if self._turn_base else None)
            out.append(Usage(tokens=tokens, scope="turn"))
            usage = CompletionUsage(tokens=tokens)
        text = self._turn_text
        for raw in turn.items:
            if _ITEM_HEAD.decode(raw).type == "agentMessage":
                text = _TEXT_ITEM.decode(raw).text
        out.append(TurnComplete(reason=reason, stop_reason=turn.status, native_turn_id=turn.id))
        completion = Completion(stop_reason=stop, text=text, usage=usage, error=error)
        out.append(MessageCompleted(session_id="", message_id=turn.id, result=completion))
        self._turn_id = None
        self._ended_turn = turn.id
        return out

    # ------------------------------------------------------------ items

    def _on_item_started(self, p: _ItemParams) -> list[Item]:
        turn = self._unannounced_turn(p.turn_id)
        out = self._item_started(p)
        return [*turn, *out] if turn else out

    def _item_started(self, p: _ItemParams) -> list[Item]:
        head = _ITEM_HEAD.decode(p.item)
        started = _ITEM_STARTED.get(head.type)
        if head.type in _ITEM_CLOSE:
            if self._open is NO_TABLE:
                self._open = table(self, "item", OPEN_CALLS)
            put(self._open, head.id, _Open(head.type, p.item))
        if started is None:
            return [Passthrough()]
        if head.type not in _CALL_CLOSE:
            return [*started(self, p.item, None)] or [Passthrough()]
        # a tool call: its start carries, in the core's table, what its end repeats
        note = _Note(head.type, p.item)
        out: list[Item] = [
            Emit(body=b, note=note) if type(b) is ToolCall and b.phase == "started" else b
            for b in started(self, p.item, note)
        ]
        return out or [Passthrough()]

    def _note(self, item_id: str) -> _Note | None:
        """What the open tool call ``item_id`` was started with (None: not open, or unknown)."""
        known = self.calls.get(item_id)
        note = known.note if known is not None else None
        return note if isinstance(note, _Note) else None

    def _on_item_completed(self, p: _ItemParams) -> list[Item]:
        turn = self._unannounced_turn(p.turn_id)
        out = self._item_completed(p)
        return [*turn, *out] if turn else out

    def _item_completed(self, p: _ItemParams) -> list[Item]:
        head = _ITEM_HEAD.decode(p.item)
        completed = _ITEM_COMPLETED.get(head.type)
        if head.type != "userMessage":
            self._turn_answered = True
        if self._open.pop(head.id, None) is not None and not self._open:
            self._open = NO_TABLE
        note = self._note(head.id)
        if note is None and head.id in self._declined:
            # 0.77: a declined command completes again, ``failed`` with "exec command rejected by
            # user": the same end, already reported
            return [Passthrough()]
        if head.status == "declined":
            self._declined = recent(self._declined)
            self._declined.add(head.id)
        if completed is None:
            return [Passthrough()]
        return [*completed(self, p.item, note)] or [Passthrough()]

    # started -----------------------------------------------------------

    def _started_command(self, raw: Raw, note: _Note | None) -> list[Body]:
        v = _COMMAND.decode(raw)
        return [ci.command_started(v.id, v.command, v.cwd)]

    def _started_file_change(self, raw: Raw, note: _Note | None) -> list[Body]:
        v = _FILE_CHANGE.decode(raw)
        return ci.file_change_started(v.id, _changes(v.changes), note.seen if note else set())

    def _started_mcp(self, raw: Raw, note: _Note | None) -> list[Body]:
        v = _MCP.decode(raw)
        return ci.mcp_started(v.id, v.server, v.tool, ci.raw_or_none(v.arguments))

    def _started_web_search(self, raw: Raw, note: _Note | None) -> list[Body]:
        v = _WEB_SEARCH.decode(raw)
        return [ci.web_search_started(v.id, v.query)]

    def _started_image_view(self, raw: Raw, note: _Note | None) -> list[Body]:
        v = _IMAGE_VIEW.decode(raw)
        return [ci.image_view(v.id, v.path, "started")]

    def _started_generic_tool(self, raw: Raw, note: _Note | None) -> list[Body]:
        head = _ITEM_HEAD.decode(raw)
        v = _GENERIC_TOOL.decode(raw)
        tool = v.tool or head.type
        return [ToolCall(call_id=v.id, tool=tool, phase="started", category="other", input=ci.raw_or_none(v.arguments))]

    def _started_subagent(self, raw: Raw, note: _Note | None) -> list[Body]:
        """multi_agent_v2 reports a spawn as a ``subAgentActivity`` item (id: the model's
        ``spawn_agent`` call id), not as a tool item: that item is the spawning call."""
        v = _SUB_AGENT.decode(raw)
        thread, label = v.agent_thread_id, v.agent_path
        if v.kind == "started":
            self._subagents_table()[thread] = v.id
            return [
                ToolCall(call_id=v.id, tool="spawnAgent", phase="started", category="other", title=label),
                *ci.collab_subagent(thread, "started", v.id, label, model=v.model),
            ]
        call = self._subagents.get(thread) or None
        if v.kind in ("completed", "interrupted"):
            if v.kind == "completed":
                self._says_subagent_end = True
            out: list[Body] = []
            if thread not in self._subagents:
                if thread in self._inferred_ends:
                    return []  # said already, after its thread's turn/completed
                if thread in self._ended_subagents:
                    # the end of a later run (a follow-up) not seen starting (no connection
                    # carries its thread): it ran again
                    out.append(self._resumed(thread))
            self._subagent_ended(thread)
            return out + self._ends(thread, "completed" if v.kind == "completed" else "cancelled", call, label)
        return [Subagent(subagent_id=thread, phase="progress", name=label, activity=v.kind, call_id=call)]

    def _completed_collab(self, raw: Raw, note: _Note | None) -> list[Body]:
        """A collab tool call's end; ``spawnAgent`` starts its receivers, and the states it
        reports end the sub-agents that finished (the shape before multi_agent_v2)."""
        out = self._completed_generic_tool(raw, note)
        v = _COLLAB.decode(raw)
        if v.status != "completed":
            return out
        if v.tool == "spawnAgent":
            for thread in v.receiver_thread_ids:
                if thread not in self._subagents:
                    self._subagents_table()[thread] = v.id
                    out += ci.collab_subagent(thread, "started", v.id, None, prompt=v.prompt, model=v.model)
        for thread, state in v.agents_states.items():
            phase = ci.AGENT_END.get(state.status or "")
            if phase is not None and thread in self._subagents:
                out += self._ends(thread, phase, self._subagent_ended(thread), None)
        return out

    def _completed_subagent(self, raw: Raw, note: _Note | None) -> list[Body]:
        """The end of a ``subAgentActivity`` item: a spawn's call ends; another notice was
        said at its start.  0.142 sends only ``item/completed`` (and thread/resume history
        has no starts): a spawn not started yet starts with its end, a sub-agent still running
        ends."""
        v = _SUB_AGENT.decode(raw)
        if v.kind != "started":
            running = v.kind in ("completed", "interrupted") and v.agent_thread_id in self._subagents
            return self._started_subagent(raw, None) if running else []
        end = ToolCall(call_id=v.id, tool="spawnAgent", phase="completed", category="other", title=v.agent_path)
        if note is None and v.agent_thread_id not in self._subagents:
            return [*self._started_subagent(raw, None), end]
        return [end]

    def _started_compaction(self, raw: Raw, note: _Note | None) -> list[Body]:
        return [ci.compaction(_ITEM_HEAD.decode(raw).id, "in_progress")]

    # completed ---------------------------------------------------------

    def _completed_user_message(self, raw: Raw, note: _Note | None) -> list[Body]:
        v = _USER_MESSAGE.decode(raw)
        texts = [c.text for c in v.content if c.type == "text" and c.text is not None]
        images = [Image(uri=c.url or c.path) for c in v.content if c.type in ("image", "localImage")]
        return [ci.user_message(v.id, texts, images)]

    def _completed_agent_message(self, raw: Raw, note: _Note | None) -> list[Body]:
        v = _TEXT_ITEM.decode(raw)
        if self._turn_text is None or v.phase in (None, "final_answer"):
            self._turn_text = v.text
        return [ci.agent_message(v.id, v.text)]

    def _completed_plan(self, raw: Raw, note: _Note | None) -> list[Body]:
        v = _TEXT_ITEM.decode(raw)
        return [ci.agent_message(v.id, v.text)]

    def _completed_reasoning(self, raw: Raw, note: _Note | None) -> list[Body]:
        v = _REASONING.decode(raw)
        return [ci.reasoning(v.id, v.summary, v.content)]

    def _completed_command(self, raw: Raw, note: _Note | None) -> list[Body]:
        v = _COMMAND.decode(raw)
        streamed = note is not None and note.streamed
        return ci.command_finished(
            v.id, v.command, v.cwd, v.status, v.aggregated_output, v.exit_code, output_streamed=streamed
        )

    def _completed_file_change(self, raw: Raw, note: _Note | None) -> list[Body]:
        v = _FILE_CHANGE.decode(raw)
        return ci.file_change_finished(v.id, _changes(v.changes), v.status, note.seen if note else set())

    def _completed_mcp(self, raw: Raw, note: _Note | None) -> list[Body]:
        v = _MCP.decode(raw)
        result = ci.raw_or_none(v.result)
        error = ci.raw_or_none(v.error)
        return ci.mcp_finished(
            v.id, v.server, v.tool, ci.raw_or_none(v.arguments), v.status, result, error, v.duration_ms
        )

    def _completed_web_search(self, raw: Raw, note: _Note | None) -> list[Body]:
        v = _WEB_SEARCH.decode(raw)
        results = ci.raw_or_none(v.results)
        return [ci.web_search_finished(v.id, v.query, results)]

    def _completed_image_view(self, raw: Raw, note: _Note | None) -> list[Body]:
        v = _IMAGE_VIEW.decode(raw)
        return [ci.image_view(v.id, v.path, "completed")]

    def _completed_generic_tool(self, raw: Raw, note: _Note | None) -> list[Body]:
        head = _ITEM_HEAD.decode(raw)
        v = _GENERIC_TOOL.decode(raw)
        phase = ci.phase_of(v.status)
        if v.success is False:
            phase = "failed"
        output = ci.raw_or_none(v.content_items)
        return [
            ToolCall(
                call_id=v.id,
                tool=v.tool or head.type,
                phase=phase if phase != "started" else "completed",
                category="other",
                input=ci.raw_or_none(v.arguments),  # a collab call has no arguments: absent, never null
                output=output,
            )
        ]

    def _completed_compaction(self, raw: Raw, note: _Note | None) -> list[Body]:
        return [ci.compaction(_ITEM_HEAD.decode(raw).id, "completed")]

    def _completed_review(self, raw: Raw, note: _Note | None) -> list[Body]:
        head = _ITEM_HEAD.decode(raw)
        return [ModeUpdate(mode_id="review" if head.type == "enteredReviewMode" else "default")]

    # closed by the turn's end --------------------------------------------

    def _close_text(self, item_id: str, op: _Open) -> list[Body]:
        if op.kind == "reasoning":
            return [ci.reasoning(item_id, ["".join(op.text)] if op.text else [])]
        text = "".join(op.text)
        if op.kind == "agentMessage" and text:
            self._turn_text = text
        return [AssistantMessage(message_id=item_id, text=text)]

    def _close_user_message(self, item_id: str, op: _Open) -> list[Body]:
        return self._completed_user_message(op.view, None)

    def _close_command(self, item_id: str, note: _Note) -> list[Body]:
        v = _COMMAND.decode(note.view)
        return ci.command_finished(v.id, v.command, v.cwd, "interrupted", None, None, output_streamed=True)

    def _close_file_change(self, item_id: str, note: _Note) -> list[Body]:
        v = _FILE_CHANGE.decode(note.view)
        return ci.file_change_finished(v.id, _changes(v.changes), "interrupted", note.seen)

    def _close_mcp(self, item_id: str, note: _Note) -> list[Body]:
        v = _MCP.decode(note.view)
        return ci.mcp_finished(v.id, v.server, v.tool, ci.raw_or_none(v.arguments), "interrupted", None, None)

    def _close_web_search(self, item_id: str, op: _Open) -> list[Body]:
        v = _WEB_SEARCH.decode(op.view)
        return [ci.web_search_finished(v.id, v.query, failed=True)]

    def _close_image_view(self, item_id: str, note: _Note) -> list[Body]:
        return [ci.image_view(item_id, _IMAGE_VIEW.decode(note.view).path, "failed")]

    def _close_named(self, item_id: str, note: _Note) -> list[Body]:
        """A generic tool or a sub-agent's spawn: the core repeats its tool, title, category."""
        return [ToolCall(call_id=item_id, tool="", phase="failed")]

    def _close_compaction(self, item_id: str, op: _Open) -> list[Body]:
        return [ci.compaction(item_id, "cancelled")]

    # deltas --------------------------------------------------------------

    def _on_text_delta(self, p: _DeltaParams) -> list[Item]:
        op = self._open.get(p.item_id)
        if op is not None:
            op.text.append(p.delta)
        return [AssistantDelta(message_id=p.item_id, text=p.delta)]

    def _on_reasoning_delta(self, p: _DeltaParams) -> list[Item]:
        op = self._open.get(p.item_id)
        if op is not None:
            op.text.append(p.delta)
        return [ReasoningDelta(reasoning_id=p.item_id, text=p.delta)]

    def _on_summary_part(self, p: _DeltaParams) -> list[Item]:
        # A new summary part: the completed summary joins parts with a blank line.
        if not p.summary_index:
            return [Passthrough()]
        op = self._open.get(p.item_id)
        if op is not None:
            op.text.append("\n\n")
        return [ReasoningDelta(reasoning_id=p.item_id, text="\n\n")]

    def _on_output_delta(self, p: _DeltaParams) -> list[Item]:
        note = self._note(p.item_id)
        if note is not None:
            note.streamed = True
        return [CommandOutput(call_id=p.item_id, stream="merged", delta=p.delta)]

    def _on_terminal_interaction(self, p: _ProgressParams) -> list[Item]:
        return [
            ToolCall(
                call_id=p.item_id, tool=ci.COMMAND_TOOL, phase="updated", category="execute", input={"stdin": p.stdin}
            )
        ]

    def _on_patch_updated(self, p: _ProgressParams) -> list[Item]:
        note = self._note(p.item_id)
        return list(ci.file_diffs(p.item_id, _changes(p.changes), note.seen if note else set())) or [Passthrough()]

    def _on_mcp_progress(self, p: _ProgressParams) -> list[Item]:
        note = self._note(p.item_id)
        if note is None or note.kind != "mcpToolCall":
            return [Passthrough()]
        v = _MCP.decode(note.view)
        return [McpTool(call_id=p.item_id, server=v.server, tool=v.tool, phase="progress", result=p.message)]

    # ------------------------------------------------------------ turn-scoped notifications

    def _on_plan(self, p: _PlanParams) -> list[Item]:
        entries = [PlanEntry(content=s.step, status=ci.plan_status(s.status)) for s in p.plan]
        return [Plan(entries=entries, explanation=p.explanation)]

    def _on_diff(self, p: _DiffParams) -> list[Item]:
        out: list[Item] = []
        for path, section, kind in _split_git_diff(p.diff):
            if self._diffs.get(path) != section:
                self._diffs[path] = section
                out.append(FileDiff(path=path, diff=section, change_kind=kind))
        return out or [Passthrough()]  # an identical re-send

    def _on_token_usage(self, params: _TokenUsageParams) -> list[Item]:
        u = params.token_usage
        if u == self._usage:
            return [Passthrough()]  # an identical re-send
        self._usage = u
        window = u.model_context_window
        if _is_overflow_marker(u):
            used = u.total.total_tokens or 0
            return [Usage(context=ContextWindow(used=used, size=window))]
        if self._restoring and self._totals is None and not self._turn_answered:
            # the resumed thread's totals said again before the model answered (0.120): what
            # the turn used is counted from them, not from 0 (its earlier turns counted twice)
            self._turn_base = u.total
        self._restoring = False
        self._totals = u.total
        last = u.last.total_tokens if u.last is not None else None
        context = ContextWindow(used=last, size=window) if last is not None else None
        return [Usage(context=context, tokens=_tokens(u.total), scope="session")]

    def _on_rate_limits(self, params: _RateLimitsParams) -> list[Item]:
        raw = params.rate_limits
        if bytes(raw) == self._rate_limits or not ci.present(raw):
            return [Passthrough()]  # unchanged, or no limits in it (absent is omitted, never null)
        self._rate_limits = bytes(raw)
        state = _LIMIT_STATE.decode(raw)
        return [Usage(rate_limits=raw), *self._account_limit(state.rate_limit_reached_type, state.plan_type)]

    def _account_limit(self, reached: str | None, plan: str | None) -> list[Item]:
        """``account.exhausted`` when a limit is reached, ``account.available`` when it lifts.

        The account is named by its plan when Codex says it (``planType``), else
        ``default``: the one account the agent runs with."""
        account = plan or self._account or "default"
        self._account = account
        if reached is not None and not self._exhausted:
            self._exhausted = True
            return [AccountExhausted(session_id="", agent=self.agent, account=account, reason="limit")]
        if reached is None and self._exhausted:
            self._exhausted = False
            return [AccountAvailable(session_id="", agent=self.agent, account=account)]
        return []

    def _on_error(self, p: _ErrorParams) -> list[Item]:
        if not p.will_retry and p.turn_id is not None and p.turn_id == self._turn_id:
            self._turn_error = True
        kind = ci.error_type(p.error.codex_error_info)
        # a retry notice (willRetry: true) is a warning: Codex retries and the turn goes on
        out: list[Item] = [ci.error_notice(_error_text(p.error), retrying=p.will_retry, error_type=kind)]
        if kind == "usageLimitExceeded":
            out += self._account_limit(kind, None)
        elif kind == "contextWindowExceeded" and not p.will_retry:
            drop = ContextDrop(what="message", reason=_error_text(p.error))
            out.append(ContextDegraded(session_id="", dropped=[drop]))
        return out

    def _on_warning(self, p: _WarningParams) -> list[Item]:
        text = p.message or p.summary or ""
        if p.details:
            text = f"{text}\n{p.details}"
        return [WarningBody(message=text, source="codex")]

    def _on_mcp_startup(self, p: _McpStartupParams) -> list[Item]:
        action = _MCP_ACTION.get(p.status, "updated")
        detail: Any = p.status
        if p.error is not None or ci.present(p.failure_reason):
            detail = {"status": p.status, "error": p.error, "failureReason": p.failure_reason}
        applied = ContextApplied(what="mcp-server", action=action, name=p.name, detail=detail)
        return [ContextUpdated(session_id="", applied=[applied])]

    def _on_rerouted(self, params: _ReroutedParams) -> list[Item]:
        return [ModeUpdate(model=params.to_model)]

    def _on_thread_name(self, p: _ThreadNameParams) -> list[Item]:
        return [SessionInfo(title=p.thread_name or p.name)]

    def _on_compacted(self, p: _CompactedParams) -> list[Item]:
        return [Compaction(compaction_id=p.turn_id, status="completed")]

    def _on_request_resolved(self, params: _ResolvedParams) -> list[Item]:
        rid = params.request_id
        key = str(rid)
        if key in self._answered:
            self._answered.discard(key)
            if not self._answered:
                self._answered = NO_RECENT
            return [Passthrough()]  # the client's answer already resolved it
        # Resolved without an answer (the turn ended first): cancelled.
        pending = self._pending.pop(("agent", rid), None)
        if not self._pending:
            self._pending = NO_TABLE
        if pending is None or pending.method not in _CLIENT_RESPONSES:
            return [Passthrough()]
        return [RequestResolved(request_id=key, outcome="cancelled")]

    # ------------------------------------------------------------ server requests

    def _ask(self, rid: int | str, method: str, **kw: str) -> str:
        key = str(rid)
        self._pending_table()[("agent", rid)] = _Pending(method, key, **kw)
        return key

    def _pending_table(self) -> Bounded[tuple[Direction, int | str], _Pending]:
        """The table of requests awaiting a response, made at its first entry."""
        if self._pending is NO_TABLE:
            self._pending = table(self, "request", PENDING_REQUESTS)
        return self._pending

    def spawned_turn_ended(self, native_id: str, turn: TurnComplete) -> list[Item]:
        """A sub-agent's thread ended a turn.  Codex says a sub-agent is done only from 0.150
        on, and only when its turn completed (a ``subAgentActivity`` of kind ``completed``,
        right after the thread's ``turn/completed``); before, only a ``wait`` that reports
        the sub-agent's state (0.96) says it.  What Codex leaves unsaid is said here, at
        the same place (synthetic: inferred): any end before 0.150, a failed or interrupted
        turn after, and a turn cut off with the input (ended by the core, ``failed``); for a
        later run (a follow-up, :meth:`spawned_turn_started`), again."""
        if native_id not in self._subagents:
            return []  # not running: not this thread's, or its end was said
        if turn.stop_reason is None and turn.reason == "interrupt":
            phase: Literal["completed", "failed", "cancelled"] = "failed"  # cut off: the core ended its turn
        else:
            phase = _TURN_END_PHASES.get(turn.stop_reason or "", "completed")
        if phase == "completed":
            # the running server's version (its userAgent), else the thread's (which
            # Codex made it): a connection captured after its initialize says only the latter
            known = version_tuple(self._version or self._thread_version)
            if self._says_subagent_end or (known is not None and known >= SUBAGENT_END_SAID):
                return []
        call = self._subagent_ended(native_id)
        self._inferred_ends = recent(self._inferred_ends)
        self._inferred_ends.add(native_id)
        return [Emit(body=body, synthetic=True) for body in self._ends(native_id, phase, call, None)]

    def spawned_turn_started(self, native_id: str) -> list[Item]:
        """A sub-agent's thread started a turn.  One that this thread's stream said ended
        runs again (a follow-up: ``followup_task``, ``send_input``), which Codex does not
        say: ``subagent`` ``resumed`` here (synthetic), and its next end is said again (by
        Codex from 0.150 on, else inferred), the ``subagent``'s alone (the spawn's ``task``
        ended with its first run)."""
        if native_id in self._subagents or native_id not in self._ended_subagents:
            return []  # running (its first turn), or not one this thread spawned
        self._inferred_ends.discard(native_id)  # a notice of Codex's after this is this run's
        self._subagents_table()[native_id] = ""
        return [Emit(body=self._resumed(native_id), synthetic=True)]

    def _resumed(self, thread: str) -> Subagent:
        """A sub-agent that ended runs again: its later ends are the ``subagent``'s alone."""
        self._ended_subagents.discard(thread)
        self._reruns = recent(self._reruns)
        self._reruns.add(thread)
        return Subagent(subagent_id=thread, phase="resumed")

    def _ends(
        self, thread: str, phase: Literal["completed", "failed", "cancelled"], call: str | None, label: str | None
    ) -> list[Body]:
        """A sub-agent's end: its ``subagent`` and the spawn's ``task``, or, for a later run
        (a follow-up), the ``subagent`` alone."""
        bodies = ci.collab_subagent(thread, phase, call, label)
        return bodies[:1] if thread in self._reruns else bodies

    def _subagents_table(self) -> Bounded[str, str]:
        """The table of sub-agents running, made at its first entry."""
        if self._subagents is NO_TABLE:
            self._subagents = table(self, "sub-agent", OPEN_CALLS)
        return self._subagents

    def _subagent_ended(self, thread: str) -> str | None:
        """The call that spawned ``thread`` (None: unknown, or a later run), forgotten with
        it; the sub-agent is remembered as ended (a follow-up may run it again)."""
        call = self._subagents.pop(thread, None)
        if not self._subagents:
            self._subagents = NO_TABLE
        self._ended_subagents = recent(self._ended_subagents)
        self._ended_subagents.add(thread)
        return call or None

    def _on_command_approval(self, params: Raw, rid: int | str) -> list[Item]:
        p = _COMMAND_APPROVAL.decode(params)
        key = self._ask(rid, "item/commandExecution/requestApproval")
        command = p.command
        cwd = p.cwd
        note = self._note(p.item_id)
        if note is not None and note.kind == "commandExecution":
            started = _COMMAND.decode(note.view)
            command = command or started.command
            cwd = cwd or started.cwd
        names = [_decision_name(d) for d in p.available_decisions] if p.available_decisions else _DEFAULT_DECISIONS
        ref = ToolCallRef(
            call_id=p.item_id,
            tool=ci.COMMAND_TOOL,
            title=command or p.item_id,
            input={"command": command, "cwd": cwd},
            category="execute",
        )
        detail = PermissionDetail(command=command, cwd=cwd, reason=p.reason)
        return [PermissionRequest(request_id=key, tool_call=ref, options=[_option(n) for n in names], detail=detail)]

    def _on_file_approval(self, params: Raw, rid: int | str) -> list[Item]:
        p = _FILE_APPROVAL.decode(params)
        key = self._ask(rid, "item/fileChange/requestApproval")
        paths: list[str] = []
        note = self._note(p.item_id)
        if note is not None and note.kind == "fileChange":
            paths = [c.path for c in _FILE_CHANGE.decode(note.view).changes]
        ref = ToolCallRef(
            call_id=p.item_id,
            tool=ci.PATCH_TOOL,
            title=", ".join(paths) or p.item_id,
            input={"paths": paths},
            category="edit",
        )
        detail = PermissionDetail(blocked_path=p.grant_root, reason=p.reason)
        options = [_option(n) for n in _DEFAULT_DECISIONS]
        return [PermissionRequest(request_id=key, tool_call=ref, options=options, detail=detail)]

    def _on_permissions_approval(self, params: Raw, rid: int | str) -> list[Item]:
        p = _PERMISSIONS_APPROVAL.decode(params)
        key = self._ask(rid, "item/permissions/requestApproval")
        ref = ToolCallRef(
            call_id=p.item_id,
            tool="request_permissions",
            title=p.reason or "permissions",
            input=ci.raw_or_none(p.permissions),
        )
        options = [
            PermissionOption(id="turn", kind="allow_once", label="Grant for this turn"),
            PermissionOption(id="session", kind="allow_always", label="Grant for this session"),
            PermissionOption(id="decline", kind="reject_once", label="Grant nothing"),
        ]
        detail = PermissionDetail(cwd=p.cwd, reason=p.reason)
        return [PermissionRequest(request_id=key, tool_call=ref, options=options, detail=detail)]

    def _on_user_input_request(self, params: Raw, rid: int | str) -> list[Item]:
        p = _USER_INPUT_REQUEST.decode(params)
        key = self._ask(rid, "item/tool/requestUserInput")
        questions = [
            Question(
                id=q.id,
                prompt=q.question,
                header=q.header,
                multi_select=False,
                allow_free_text=q.is_other or not q.options,
                options=[QuestionOption(id=o.label, label=o.label, description=o.description) for o in q.options or []],
            )
            for q in p.questions
        ]
        return [UserQuestion(request_id=key, blocking=p.is_blocking, questions=questions)]

    def _on_elicitation(self, params: Raw, rid: int | str) -> list[Item]:
        p = _ELICITATION.decode(params)
        key = self._ask(rid, "mcpServer/elicitation/request")
        question = Question(
            id=key, prompt=p.message, header=p.server_name or None, multi_select=False, allow_free_text=True, options=[]
        )
        return [UserQuestion(request_id=key, blocking=True, questions=[question])]

    def _on_tool_call_request(self, params: Raw, rid: int | str) -> list[Item]:
        p = _TOOL_CALL_REQUEST.decode(params)
        self._ask(rid, "item/tool/call", call_id=p.call_id)
        return [
            ToolCall(
                call_id=p.call_id, tool=p.tool, phase="started", category="other", input=ci.raw_or_none(p.arguments)
            )
        ]

    # ------------------------------------------------------------ the client's answers

    def _on_answer(self, pending: _Pending, raw: Raw) -> list[Item]:
        self._answered = recent(self._answered)
        self._answered.add(pending.request_id)
        option = self._chosen_option(pending.method, raw)
        answer = ci.raw_or_none(raw)
        return [RequestResolved(request_id=pending.request_id, outcome="answered", answer=answer, option_id=option)]

    @staticmethod
    def _chosen_option(method: str, raw: Raw) -> str | None:
        """The option id an approval answer chose (the options the request was given)."""
        if method == "item/tool/requestUserInput":
            return None
        try:
            answer = _DECISION.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        if method == "item/permissions/requestApproval":
            return (answer.scope or "turn") if _grants(answer.permissions) else "decline"
        decision = ci.raw_or_none(answer.decision)
        return None if decision is None else _decision_name(decision)

    def _on_elicitation_answer(self, pending: _Pending, raw: Raw) -> list[Item]:
        self._answered = recent(self._answered)
        self._answered.add(pending.request_id)
        action = _DECISION.decode(raw).action
        outcome: Literal["answered", "cancelled"] = "cancelled" if action == "cancel" else "answered"
        return [RequestResolved(request_id=pending.request_id, outcome=outcome, answer=ci.raw_or_none(raw))]

    def _on_tool_call_answer(self, pending: _Pending, raw: Raw) -> list[Item]:
        r = _TOOL_CALL_RESULT.decode(raw)
        output = ci.raw_or_none(r.content_items)
        phase: Literal["completed", "failed"] = "failed" if r.success is False else "completed"
        # named by its id only: the core repeats the tool and category of its start
        return [ToolCall(call_id=pending.call_id, tool="", phase=phase, output=output)]


#: The first Codex that tells a thread when a sub-agent it spawned completed a turn (a
#: ``subAgentActivity`` of kind ``completed``, id ``subagent-completed-<turn id>``; 0.148
#: and 0.149 do not): before it, the end is inferred from the sub-agent thread's
#: ``turn/completed``.
SUBAGENT_END_SAID: Final = (0, 150)

#: A sub-agent thread's turn status (``TurnComplete.stop_reason``) -> the sub-agent's end.
_TURN_END_PHASES: Final[dict[str, Literal["completed", "failed", "cancelled"]]] = {
    "completed": "completed",
    "interrupted": "cancelled",
    "failed": "failed",
}

#: Open items that are not texts, and whose start is not a ``tool-call`` body: the core
#: does not know them as calls, and does not settle them.
_NOT_CALLS: Final = frozenset({"webSearch", "contextCompaction"})


_MCP_ACTION: Final[dict[str, Literal["added", "removed", "updated", "failed"]]] = {
    "starting": "updated",
    "ready": "added",
    "failed": "failed",
    "cancelled": "removed",
}

A = CodexAppServerAdapter

_ITEM_STARTED: Final[dict[str, _ItemHandler]] = {
    "commandExecution": A._started_command,
    "fileChange": A._started_file_change,
    "mcpToolCall": A._started_mcp,
    "webSearch": A._started_web_search,
    "imageView": A._started_image_view,
    "dynamicToolCall": A._started_generic_tool,
    "collabAgentToolCall": A._started_generic_tool,
    "imageGeneration": A._started_generic_tool,
    "contextCompaction": A._started_compaction,
    "subAgentActivity": A._started_subagent,
    # userMessage, agentMessage, reasoning, plan: nothing to say before the text
}

_ITEM_COMPLETED: Final[dict[str, _ItemHandler]] = {
    "userMessage": A._completed_user_message,
    "agentMessage": A._completed_agent_message,
    "plan": A._completed_plan,
    "reasoning": A._completed_reasoning,
    "commandExecution": A._completed_command,
    "fileChange": A._completed_file_change,
    "mcpToolCall": A._completed_mcp,
    "webSearch": A._completed_web_search,
    "imageView": A._completed_image_view,
    "dynamicToolCall": A._completed_generic_tool,
    "collabAgentToolCall": A._completed_collab,
    "imageGeneration": A._completed_generic_tool,
    "contextCompaction": A._completed_compaction,
    "subAgentActivity": A._completed_subagent,
    "enteredReviewMode": A._completed_review,
    "exitedReviewMode": A._completed_review,
}

#: Items that are not tool calls, kept open in the adapter (``_open``), by how their turn's
#: end closes them.
_ITEM_CLOSE: Final[dict[str, Callable[[CodexAppServerAdapter, str, _Open], list[Body]]]] = {
    "userMessage": A._close_user_message,
    "agentMessage": A._close_text,
    "plan": A._close_text,
    "reasoning": A._close_text,
    "webSearch": A._close_web_search,
    "contextCompaction": A._close_compaction,
}

#: Items that are tool calls (open in the core's table, ``Adapter.calls``, with a ``_Note``),
#: by how their turn's end closes them.
_CALL_CLOSE: Final[dict[str, Callable[[CodexAppServerAdapter, str, _Note], list[Body]]]] = {
    "commandExecution": A._close_command,
    "fileChange": A._close_file_change,
    "mcpToolCall": A._close_mcp,
    "imageView": A._close_image_view,
    "dynamicToolCall": A._close_named,
    "collabAgentToolCall": A._close_named,
    "imageGeneration": A._close_named,
    "subAgentActivity": A._close_named,  # a spawn (``kind: started``): the others start no call
}


def _read(params: msgspec.json.Decoder[Any], handler: Callable[[CodexAppServerAdapter, Any], list[Item]]) -> _Reader:
    """A notification's reader: its params' view, the whole notification's, its handler."""
    return (params, _notice(params), handler)


#: the notifications the adapter reads: each one's params' view, the view of the whole
#: notification (read in one pass when its Connection hands over the method, ``_one_pass``),
#: and its handler, given the params' view
_AGENT_NOTIFICATIONS: Final[dict[str, _Reader]] = {
    "thread/started": _read(_THREAD_PARAMS, A._on_thread_started),
    "thread/name/updated": _read(_THREAD_NAME, A._on_thread_name),
    "thread/compacted": _read(_COMPACTED, A._on_compacted),
    "turn/started": _read(_TURN_PARAMS, A._on_turn_started),
    "turn/completed": _read(_TURN_PARAMS, A._on_turn_completed),
    "turn/plan/updated": _read(_PLAN, A._on_plan),
    "turn/diff/updated": _read(_DIFF, A._on_diff),
    "item/started": _read(_ITEM_PARAMS, A._on_item_started),
    "item/completed": _read(_ITEM_PARAMS, A._on_item_completed),
    "item/agentMessage/delta": _read(_DELTA, A._on_text_delta),
    "item/plan/delta": _read(_DELTA, A._on_text_delta),
    "item/reasoning/summaryTextDelta": _read(_DELTA, A._on_reasoning_delta),
    "item/reasoning/textDelta": _read(_DELTA, A._on_reasoning_delta),
    "item/reasoning/summaryPartAdded": _read(_DELTA, A._on_summary_part),
    "item/commandExecution/outputDelta": _read(_DELTA, A._on_output_delta),
    "item/fileChange/outputDelta": _read(_DELTA, A._on_output_delta),
    "item/commandExecution/terminalInteraction": _read(_PROGRESS, A._on_terminal_interaction),
    "item/fileChange/patchUpdated": _read(_PROGRESS, A._on_patch_updated),
    "item/mcpToolCall/progress": _read(_PROGRESS, A._on_mcp_progress),
    "thread/tokenUsage/updated": _read(_TOKEN_USAGE, A._on_token_usage),
    "account/rateLimits/updated": _read(_RATE_LIMITS, A._on_rate_limits),
    "error": _read(_ERROR, A._on_error),
    "configWarning": _read(_WARNING, A._on_warning),
    "warning": _read(_WARNING, A._on_warning),
    "guardianWarning": _read(_WARNING, A._on_warning),
    "deprecationNotice": _read(_WARNING, A._on_warning),
    "mcpServer/startupStatus/updated": _read(_MCP_STARTUP, A._on_mcp_startup),
    "model/rerouted": _read(_REROUTED, A._on_rerouted),
    "serverRequest/resolved": _read(_RESOLVED, A._on_request_resolved),
}

_SERVER_REQUESTS: Final[dict[str, Callable[[CodexAppServerAdapter, Raw, int | str], list[Item]]]] = {
    "item/commandExecution/requestApproval": A._on_command_approval,
    "item/fileChange/requestApproval": A._on_file_approval,
    "item/permissions/requestApproval": A._on_permissions_approval,
    "item/tool/requestUserInput": A._on_user_input_request,
    "mcpServer/elicitation/request": A._on_elicitation,
    "item/tool/call": A._on_tool_call_request,
}

# The client's answers to the server's requests, by the request's method.
_CLIENT_RESPONSES: Final[dict[str, _ResponseHandler]] = {
    "item/commandExecution/requestApproval": A._on_answer,
    "item/fileChange/requestApproval": A._on_answer,
    "item/permissions/requestApproval": A._on_answer,
    "item/tool/requestUserInput": A._on_answer,
    "mcpServer/elicitation/request": A._on_elicitation_answer,
    "item/tool/call": A._on_tool_call_answer,
}

# The server's answers to the client's requests, by the request's method.
_AGENT_RESPONSES: Final[dict[str, _ResponseHandler]] = {
    "initialize": A._on_initialize,
    "thread/start": A._on_thread_start,
    "thread/fork": A._on_thread_start,
    "thread/resume": A._on_thread_resume,
    "turn/start": A._on_turn_start,
}

del A
