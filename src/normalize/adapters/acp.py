"""The `acp` adapter: Agent Client Protocol (v1) JSON-RPC traffic, both directions.

Facts (ACP v1, protocolVersion 1; schema 1.19-1.21; seen in claude-agent-acp 0.101.0,
codex-acp 2.6.0 and the hand-written schema-checked set; the older releases
claude-code-acp 0.4.5 and 0.16.2, codex-acp 0.7.4 and 1.0.0 as noted):

* Both sides send requests and number them independently from 0, so ids collide
  all the time: a response is matched to ``(the other side, id)``.  Every message
  is fed with its direction.
* No turn ids on the wire: a turn is a client ``session/prompt`` request and the
  agent's response to it (``stopReason`` end_turn | max_tokens | max_turn_requests
  | refusal | cancelled, or a JSON-RPC error).  Prompts are not echoed as
  ``user_message_chunk`` by either real agent.
* ``session/update`` is discriminated by ``update.sessionUpdate``; the variant's
  fields sit next to it.  Chunks carry an optional ``messageId`` (same id = same
  message); Claude gives a thinking block and its text the same id.  Without ids a
  change of variant ends a message.
* ``tool_call`` is an upsert; ``tool_call_update`` patches: absent or ``null``
  means unchanged, ``content`` and ``locations`` replace the list.  Codex starts
  calls ``in_progress``; Claude sends ``tool_call`` with empty ``rawInput`` and
  fills it through updates, and updates carrying only ``_meta.claudeCode``.
* Agent-owned terminals (both real agents): ``content: [{type: terminal,
  terminalId: <toolCallId>}]``, output in ``_meta.terminal_output_delta`` /
  ``_meta.terminal_output`` ``{terminal_id, data}``, end in ``_meta.terminal_exit``
  ``{exit_code, signal}``; no ``terminal/*`` requests were made although the
  client advertised them.  ``terminal/output`` (client-owned) is a snapshot, not a
  delta.
* Permission answers name an ``optionId``; allowed vs rejected is only known
  from that option's ``kind`` in the request.
* ``session/cancel`` is a notification; the prompt is then answered
  ``cancelled`` (codex also after a rejected permission).  Pending calls get no
  final status.
* ``session/load`` replays history as ordinary updates before its response; no
  replay marker exists.  Codex (2.6.0) sends commands and title before the history
  and a live configuration warning inside it, drops plans and cancelled calls;
  both reuse the live message ids.  Gemini CLI (0.31) answers the load right after a
  replayed prompt and sends that prompt's answer after the response: it still ends the
  replayed turn, which closes at the client's next request.
* Codex (2.6.0) reports notices as ``agent_message_chunk`` without ``messageId``
  (model text always has one); Claude (0.101.0) marks them
  ``_meta.claudeCode.kind: "informational"``.  Both become warnings.  codex-acp before
  1.1.0 (0.7.4, 1.0.0) and claude-code-acp 0.4.5 send no ``messageId`` at all: there a
  chunk without one is model text.
* codex-acp 1.6.2 announces a model call it retries as a ``session_info_update`` with only
  ``_meta.codex.error`` (``message`` "Reconnecting... 1/1", ``willRetry``): a warning.
* A model call that fails for good: codex-acp 0.7.4 answers the prompt with a JSON-RPC
  error; 1.0.0 to 2.6.0 send ``_meta.codex.threadStatus.type: "systemError"`` (an
  ``error``, not recoverable), the error's text as a notice, then answer the prompt
  ``end_turn``.  That turn ends as Codex app-server's failed turn does: ``turn-complete``
  ``interrupt`` (its native ``stopReason`` kept), the completion ``error``.
* codex-acp 2.1.1 titles a permission request with the question ("Run command", "Edit files"),
  not the call (2.6.0 gives the command, and "Edit files" too): over codex-acp the request's
  title does not rename a call that has one.
* claude-code-acp 0.4.5 sends no ``agentInfo`` (its ``authMethods`` offer ``claude-login``:
  the agent is ``claude-code``, no ``via``) and no ``_meta.claudeCode``; its errors
  carry the reason in ``data.details`` (the TypeScript SDK's shape, also Gemini CLI's).
* Gemini CLI 0.31 names a diff's file relative to the session's ``cwd`` (``hello.txt``), the
  client's ``fs/*`` requests by its absolute path: the diff is read as of ``<cwd>/<path>``.
  0.25 does too; it has no ``session/load`` (-32601) and answers a prompt whose model request
  failed ``-32603 "Internal error"`` with the API's error object in ``data.error``: its
  ``message`` is the error's.
* claude-code-acp 0.16.2 runs copies of Claude Code's Read, Write, Edit, Bash, BashOutput and
  KillShell as its own MCP tools, named ``mcp__acp__Bash``... in ``_meta.claudeCode.toolName``:
  read as Claude Code's names (``Bash``), as claude-agent-acp 0.101.0 sends them.  Its Edit's
  ``diff`` holds the changed text only; the whole file is then read (``fs/read_text_file``)
  and written (``fs/write_text_file``) through the client.
* ``session/new`` of codex-acp 2.6.0 still returns the removed ``models`` field;
  ``session/set_mode`` is echoed only as ``config_option_update``.
* Prompt responses carry the unstable ``usage`` (per turn); ``usage_update.cost``
  is cumulative for the session.  claude-agent-acp 0.55.0 answers a cancelled prompt without
  it and reports that turn's cost after the next prompt, before that turn's output: it is the
  next turn's baseline, not part of its cost.  Codex sends ``usage: null`` on cancel or failure.
  Gemini CLI (0.61.0) sends no ``usage`` but ``_meta.quota {token_count: {input_tokens,
  output_tokens}, model_usage: [{model, token_count}]}``, the turn's counts (output
  without thoughts).
* Gemini CLI (0.61.0, ``gemini --acp``) sends no ``tool_call``: a call it asks about
  first appears in ``session/request_permission``, then only as ``tool_call_update``;
  a rejected call gets no update at all.  Its ``session/load`` of a session made over
  ACP in an earlier process failed (-32603 "No previous sessions found for this
  project.") although the chat file was there.  0.45.2's load of it succeeds but replays
  only Gemini CLI's own ``<session_context>`` (date, OS, directory listing) as a
  ``user_message_chunk``, not the conversation: context, not the user's words, so no
  ``user-message`` and no replayed turn (kept as ``session.update``), as the stored chat
  (``gemini-chat``) reads the same message.
"""

from __future__ import annotations

import difflib
import posixpath
import sys
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal, get_args

import msgspec
from msgspec import UNSET, Raw, UnsetType

from normalize import (
    AssistantDelta,
    AssistantMessage,
    Body,
    Category,
    CommandEntry,
    CommandOutput,
    CommandsUpdate,
    Compaction,
    Completion,
    CompletionUsage,
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
    PermissionDetail,
    PermissionOption,
    PermissionRequest,
    Plan,
    PlanEntry,
    Problem,
    ProtocolViolation,
    Question,
    QuestionOption,
    Reasoning,
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
    UserMessage,
    UserQuestion,
)
from normalize import (
    Warning as WarningBody,
)
from normalize._lifecycle import ENDED_CALLS

from ._acp_views import (
    _AGENT_INPUT,
    _CANCEL_REQUEST,
    _CHUNK,
    _COMMAND_INPUT,
    _COMMANDS,
    _COMPACTION,
    _CONFIG,
    _ELICITATION,
    _ELICITATION_RESULT,
    _EXIT_STATUS,
    _FS_PARAMS,
    _FS_READ_RESULT,
    _INFO,
    _INIT_PARAMS,
    _INIT_RESULT,
    _MODE,
    _NOTICE,
    _PERM_PARAMS,
    _PERM_RESULT,
    _PLAN,
    _PLAN_CONTENT,
    _PROMPT_PARAMS,
    _PROMPT_RESULT,
    _RPC,
    _SESSION_PARAMS,
    _SESSION_RESULT,
    _TERM_CREATE_RESULT,
    _TERM_OUTPUT_RESULT,
    _TERM_PARAMS,
    _TOOL_CALL,
    _UPDATE,
    _UPDATE_HEAD,
    _UPDATE_HEAD_BYTES,
    _UPDATE_PARAMS,
    _UPDATE_RPC,
    _USAGE,
    _AgentInput,
    _AnyUpdate,
    _Block,
    _CancelRequest,
    _Chunk,
    _CommandsUpdate,
    _CompactionUpdate,
    _ConfigOption,
    _ConfigUpdate,
    _ExitStatus,
    _InfoUpdate,
    _ModeUpdate,
    _Notice,
    _PermResult,
    _PlanContentUpdate,
    _PlanEntry,
    _PlanUpdate,
    _PromptMeta,
    _PromptResult,
    _Rpc,
    _RpcError,
    _SchemaChoices,
    _SchemaField,
    _SessionParams,
    _SessionResult,
    _ToolCallView,
    _TurnUsage,
    _UpdateRpc,
    _UsageUpdate,
)
from ._base import BuiltinAdapter, DecodeMemo, on_thread, version_tuple
from ._claude_common import SUBAGENT_TOOLS, subagent_started
from ._limits import (
    BUFFER_TEXT,
    NO_RECENT,
    NO_TABLE,
    OPEN_CALLS,
    OPEN_ITEMS,
    PENDING_REQUESTS,
    Bounded,
    Recent,
    buffer_warning,
    put,
    recent,
    table,
)

__all__ = ["AcpAdapter"]


def _given(raw: Raw) -> bool:
    """A Raw field that is present and not ``null`` (ACP: absent or null = unchanged)."""
    return bool(raw) and bytes(raw) != b"null"


# --------------------------------------------------------------------------
# Mapping tables

_CATEGORY: Final[dict[str, Category]] = {
    "read": "read",
    "edit": "edit",
    "delete": "delete",
    "move": "move",
    "search": "search",
    "execute": "execute",
    "think": "think",
    "fetch": "fetch",
    "switch_mode": "other",
    "other": "other",
}

_Stop = Literal["end_turn", "max_tokens", "max_turns", "refusal", "cancelled", "error"]

_STOP_REASON: Final[dict[str, _Stop]] = {
    "end_turn": "end_turn",
    "max_tokens": "max_tokens",
    "max_turn_requests": "max_turns",
    "refusal": "refusal",
    "cancelled": "cancelled",
}

_RPC_ERROR_TYPE: Final = {
    -32700: "parse-error",
    -32600: "invalid-request",
    -32601: "method-not-found",
    -32602: "invalid-params",
    -32603: "internal-error",
    -32800: "request-cancelled",
    -32000: "auth-required",
    -32002: "resource-not-found",
}

_PLAN_STATUS: Final[dict[str, Literal["pending", "in_progress", "completed"]]] = {
    "pending": "pending",
    "in_progress": "in_progress",
    "completed": "completed",
}
_COMPACTION_STATUS: Final[dict[str, Literal["in_progress", "completed", "failed", "cancelled"]]] = {
    "in_progress": "in_progress",
    "completed": "completed",
    "failed": "failed",
    "cancelled": "cancelled",
}

#: Agents whose ``agent_message_chunk`` without ``messageId`` is a notice, not model text, and
#: the first version that gives model text an id: codex-acp 1.1.0.  Before it (1.0.0, and every
#: ``@zed-industries/codex-acp`` 0.x, whose ``agentInfo.name`` is ``codex-acp``) no chunk has an
#: id, so a chunk without one is the model's text.
_NOTICE_WITHOUT_ID: Final = {"@agentclientprotocol/codex-acp": (1, 1, 0)}


#: An agent's word for a diff's change (``_meta.kind``: Gemini CLI says ``modify``) -> the
#: ``changeKind`` every adapter writes (docs/events.md, "File changes")
_CHANGE_KINDS: Final = {
    "add": "add",
    "create": "add",
    "update": "update",
    "modify": "update",
    "edit": "update",
    "delete": "delete",
    "remove": "delete",
    "move": "move",
    "write": "write",
}


#: How a user message an agent injects itself begins: context, not the user's words (Gemini
#: CLI 0.45.2 replays its ``<session_context>`` on ``session/load``).
_INJECTED: Final = ("<session_context>",)

#: ACP bridges: packages that run another agent behind ACP, and the agent they run.  Over
#: them ``agent`` names the agent (the same as over its own protocol), and the record keeps
#: the package and its version as ``via`` / ``viaVersion`` (docs/events.md, "Identity").
_BRIDGES: Final = {
    "@agentclientprotocol/claude-agent-acp": "claude-code",
    "@zed-industries/claude-code-acp": "claude-code",
    "claude-code-acp": "claude-code",
    "claude-agent-acp": "claude-code",
    "@agentclientprotocol/codex-acp": "codex",
    "@zed-industries/codex-acp": "codex",
    "codex-acp": "codex",
}

#: claude-code-acp (0.16.2) turns Claude Code's own ``Read``, ``Write``, ``Edit``, ``Bash``,
#: ``BashOutput`` and ``KillShell`` off and serves copies of them (the same inputs) through the
#: client as its MCP tools ``mcp__acp__<name>``, the name ``_meta.claudeCode.toolName`` gives:
#: the tool is Claude Code's, named as claude-agent-acp 0.101.0 and stream-json name it.
_BRIDGE_TOOLS: Final = {
    f"mcp__acp__{name}": name for name in ("Read", "Write", "Edit", "Bash", "BashOutput", "KillShell")
}

#: The ACP session methods that mark a stream as ACP (detection).
_ACP_METHODS: Final = {
    "session/new",
    "session/load",
    "session/resume",
    "session/prompt",
    "session/update",
    "session/cancel",
    "session/request_permission",
    "session/set_mode",
    "session/set_config_option",
}


def _rpc_error_type(code: int) -> str:
    return _RPC_ERROR_TYPE.get(code, f"jsonrpc:{code}")


def _offers_claude_login(methods: Any) -> bool:
    """Whether an ``initialize`` result's ``authMethods`` offer Claude Code's own login
    (``claude-login``, "Run `claude /login`"): the agent is Claude Code.  Read only when the
    agent sends no ``agentInfo`` (claude-code-acp 0.4.5); the bridge's package and version
    are then unknown (no ``via``)."""
    return isinstance(methods, list) and any(isinstance(m, dict) and m.get("id") == "claude-login" for m in methods)


def _rpc_error_message(err: _RpcError) -> str:
    """The error's own words: ``data.message`` (codex-acp), else ``data.details`` (the TypeScript
    SDK's ``RequestError.internalError(details)``: claude-code-acp, Gemini CLI), else the model
    API's error object's ``data.error.message`` (Gemini CLI 0.25's failed prompt), else ``message``."""
    data = err.data
    if isinstance(data, dict):
        for key in ("message", "details"):
            detail = data.get(key)
            if isinstance(detail, str) and detail:
                return detail
        api = data.get("error")
        if isinstance(api, dict):
            detail = api.get("message")
            if isinstance(detail, str) and detail:
                return detail
    return err.message or f"JSON-RPC error {err.code}"


def _block_text(block: _Block) -> str | None:
    """The text a content block contributes to a message; None for media."""
    if block.type == "text":
        return block.text or ""
    if block.type == "resource_link" and block.uri:
        return f"[{block.name or block.uri}]({block.uri})"
    if block.type == "resource" and block.resource is not None and block.resource.uri:
        uri = block.resource.uri
        return f"[{uri.rsplit('/', 1)[-1] or uri}]({uri})"
    return None


def _join_blocks(parts: Sequence[str]) -> str:
    """Concatenate prompt blocks; a space between two that would otherwise touch."""
    out = ""
    for part in parts:
        if out and part and not out[-1].isspace() and not part[0].isspace():
            out += " "
        out += part
    return out


def _images(blocks: Sequence[_Block]) -> list[Image] | None:
    images = [Image(media_type=b.mime_type, data=b.data, uri=b.uri) for b in blocks if b.type == "image"]
    return images or None


def _one_pass_view(message: bytes) -> _UpdateRpc | None:
    """A ``session/update`` notification written with the head every agent seen writes,
    decoded whole in one pass; None for any other line, or one that view does not take."""
    if not message.startswith(_UPDATE_PREFIX):
        return None
    try:
        update = _UPDATE_DECODE(message)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return update if update.method == "session/update" and update.id is _UNSET else None


# (the names read per line as Final aliases: compiled, a name the module imports is read
# from its dictionary at each use, a Final one from a C global)
_UPDATE_PREFIX: Final = _UPDATE_HEAD_BYTES
_UPDATE_DECODE: Final = _UPDATE_RPC.decode
_UNSET: Final = UNSET
_RPC_DECODE: Final = _RPC.decode
_UPDATE_VIEW: Final = _UpdateRpc


def _unified(path: str, old: str | None, new: str) -> str:
    name = path.lstrip("/")  # a/<path> and b/<path>, the path absolute or not
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile="/dev/null" if old is None else f"a/{name}",
        tofile=f"b/{name}",
    )
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


# --------------------------------------------------------------------------
# State


class _Pending:
    """A request waiting for its response."""

    __slots__ = ("extra", "method")

    def __init__(self, method: str, extra: Any = None) -> None:
        self.method = method
        self.extra = extra


class _Prompt:
    """One ``session/prompt`` request: a turn once it is the oldest open prompt."""

    __slots__ = (
        "active",
        "cancel_requested",
        "cost_at_start",
        "failure",
        "images",
        "last_text",
        "message_id",
        "text",
    )

    def __init__(self, message_id: str, text: str, images: list[Image] | None) -> None:
        self.message_id = message_id
        self.text = text
        self.images = images
        self.active = False
        self.cancel_requested = False
        self.cost_at_start: float | None = None
        self.last_text: str | None = None
        #: the error the agent reported as the turn's failure, though it answers the prompt
        #: ``end_turn`` (codex-acp's systemError)
        self.failure: ErrorInfo | None = None


class _Merged:
    """What ACP said of one tool call so far: ``tool_call`` and its updates merged (updates
    are partial).  The call's note in the core's table (``self.calls``), read back by id."""

    __slots__ = (
        "call_id",
        "category",
        "diffs",
        "exit_code",
        "input",
        "locations",
        "name",
        "output",
        "prompt",
        "spawned",
        "subagent",
        "title",
    )

    def __init__(self, call_id: str, prompt: _Prompt | None) -> None:
        self.call_id = call_id
        self.prompt = prompt
        self.subagent: str | None = None  # the sub-agent (its Agent call's id) that made this call
        self.spawned = False  # an Agent/Task call whose sub-agent's start was reported
        self.name: str | None = None
        self.title: str | None = None
        self.category: Category | None = None
        self.locations: list[Location] | None = None
        self.input: Raw | None = None
        self.output: Raw | None = None
        self.exit_code: int | None = None
        self.diffs: dict[str, tuple[str | None, str]] = _NO_DIFFS  # made at the first diff

    def body(self, phase: Literal["started", "updated", "completed", "failed"]) -> ToolCall:
        return ToolCall(
            call_id=self.call_id,
            tool=self.name or "unknown",
            phase=phase,
            title=self.title,
            category=self.category,
            locations=self.locations,
            input=self.input,
            output=self.output,
            exit_code=self.exit_code,
        )

    def paths(self) -> set[str]:
        return {loc.path for loc in self.locations or ()} | set(self.diffs)


class _Buffer:
    """An assistant message or reasoning being streamed."""

    __slots__ = ("native_id", "parts", "size", "subagent", "the_id")

    def __init__(self, the_id: str, native_id: str | None, subagent: str | None) -> None:
        self.the_id = the_id
        self.native_id = native_id
        self.subagent = subagent
        self.parts: list[str] = []
        self.size = 0  # characters streamed, kept in parts up to BUFFER_TEXT


_Kind = Literal["message", "thought"]
_NO_DIFFS: Final[dict[str, tuple[str | None, str]]] = {}  # shared, never written
_NO_BUFFERS: Final[dict[_Kind, _Buffer | None]] = {"message": None, "thought": None}  # shared, never written


def _one(value: str | None) -> str | None:
    """One copy of a value every session of a connection repeats (its handshake's agent and
    version, its modes and models): a connection keeps every session's."""
    return None if value is None else sys.intern(value)


_RequestHandler = Callable[["AcpAdapter", "int | str | None", Raw, _Pending], list[Item]]
_ResponseHandler = Callable[["AcpAdapter", "int | str | None", _Pending, "_Rpc"], list[Item]]


#: the answers to ``initialize``: the same at each session a connection opens (its handshake
#: is fed to each), and from one run of an agent release to the next
_INITIALIZED: Final = DecodeMemo(_INIT_RESULT, 4)


class AcpAdapter(BuiltinAdapter):
    """Agent Client Protocol v1, client and agent sides of one connection."""

    protocol = "acp"
    routing = Routing(key="sessionId", opened_by={"session/new": ("sessionId",)}, handshake="initialize")
    announces_session = True
    ended_calls = ENDED_CALLS  # agents patch a call after its end (tool_call_update after completed)
    agent = "unknown"

    def __init__(self) -> None:
        super().__init__()
        # the requests awaiting their response, and the prompts open (oldest first): made at
        # their first entry, given back once empty (NO_TABLE: a connection keeps every session)
        self._pending: Bounded[tuple[Direction, int | str | None], _Pending] = NO_TABLE
        self._prompts: Bounded[int | str | None, _Prompt] = NO_TABLE
        self._current: _Prompt | None = None  # the prompt whose turn is open
        # the session/load requests not answered yet: a shared empty set until one is sent
        self._loads: Recent = NO_RECENT
        # terminal id -> call id, and -> output reported: made at the first terminal (most
        # sessions run none, and a connection keeps every session)
        self._terminals: Bounded[str, str] | None = None
        self._terminal_seen: Bounded[str, str] | None = None
        # the text being buffered, per kind: a shared table of none until a chunk comes
        self._buffers: dict[_Kind, _Buffer | None] = _NO_BUFFERS
        self._last_variant: str | None = None
        self._last_user_id: str | None = None
        self._replay_turn = False
        # a load answered while its replayed turn was still open: the history's updates that
        # come after the answer (Gemini CLI 0.31 sends them unawaited) end that turn, until the
        # next request of the client's
        self._late_replay = False
        self._anon = 0
        self._agent_version: str | None = None
        self._via: str | None = None
        self._via_version: str | None = None
        self._mode: str | None = None
        self._model: str | None = None
        self._cost: float | None = None
        self._cost_currency: str | None = None
        # a turn ended cancelled and the next has given no output yet: a cost reported now is
        # the cancelled turn's (claude-agent-acp 0.55.0 sends it after the next prompt)
        self._late_cost = False
        # the path and text of the last whole file the client read for the agent: what a write
        # of that path that follows replaces
        self._read: tuple[str, str] | None = None
        # the session's working directory (session/new, load, resume): what a diff's relative
        # path is relative to
        self._cwd: str | None = None
        #: a message its Connection decoded ahead (``peek``), and its view: for its feed
        self._peeked: tuple[bytes, _UpdateRpc] | None = None

    # ------------------------------------------------------------------ detection

    @classmethod
    def detect(cls, sample: Sequence[Sample]) -> float:
        score = 0.0
        for data, _ in sample:
            try:
                msg = _RPC.decode(data)
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
            if not isinstance(msg.method, str):
                continue
            if msg.method == "initialize":
                try:
                    params = _INIT_PARAMS.decode(msg.params) if msg.params else None
                except (msgspec.DecodeError, msgspec.ValidationError):
                    continue
                if (
                    params is not None
                    and isinstance(params.protocol_version, int)
                    and not isinstance(params.protocol_version, bool)
                    and isinstance(params.client_capabilities, dict)
                ):
                    return 0.95
            elif msg.method in _ACP_METHODS:
                score = 0.8
        return score

    # ------------------------------------------------------------------ feeding

    def feed(self, message: bytes, from_: Direction = "agent") -> list[Item]:
        self._check_open()
        # Most lines are session/update notifications, written by every agent seen with the
        # same head: those are decoded in one pass.  Any other line, or one that view does not
        # take, is decoded as any message (the envelope, then the params): bad input is
        # reported as before.  (A search of the whole line for the method costs more than the
        # second pass it saves.)
        peeked = self._peeked
        if peeked is not None:
            self._peeked = None
            if peeked[0] is message:  # decoded already, by its Connection (peek)
                return self._one_pass(peeked[1])
        update = _one_pass_view(message)
        if update is not None:
            return self._one_pass(update)
        try:
            msg = _RPC_DECODE(message)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise MalformedMessage(
                f"not a JSON-RPC message: {exc}", kept=message[:1024].decode("utf-8", "replace")
            ) from None
        method = msg.method
        out: list[Item]
        try:
            if type(method) is str:
                if msg.id is _UNSET:
                    handler = _NOTIFICATIONS.get(method)
                    out = handler(self, msg.params) if handler is not None else [Passthrough(method=method)]
                else:
                    out = self._request(method, msg.id, msg.params, from_)
                # every handler returns a list of its own: the head goes in front of it (no copy)
                out.insert(0, _SOURCES.get(method) or Source(method=method))
                return out
            if msg.id is not _UNSET:
                return self._response(msg, from_)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            method = msg.method if isinstance(msg.method, str) else None
            return [Source(method=method), Problem(error=MalformedMessage(f"{method or 'response'}: {exc}"))]
        return [
            Problem(
                error=ProtocolViolation("a JSON object that is neither a JSON-RPC request, notification nor response")
            )
        ]

    def peek(self, message: bytes) -> tuple[str, str | None, object] | None:
        # the session/update notifications feed decodes in one pass (most lines)
        update = _one_pass_view(message)
        return ("session/update", update.params.session_id, update) if update is not None else None

    def given(self, message: bytes, view: object) -> None:
        if type(view) is _UPDATE_VIEW:
            self._peeked = (message, view)

    def _one_pass(self, update: _UpdateRpc) -> list[Item]:
        """A ``session/update`` notification decoded in one pass."""
        try:
            out = self._on_update(update.params.update)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            return [_UPDATE_SOURCE, Problem(error=MalformedMessage(f"session/update: {exc}"))]
        out.insert(0, _UPDATE_SOURCE)
        return out

    def close(self) -> list[Item]:
        self._closed = True
        # calls and requests left open are settled by the core (docs/adapters.md)
        return _synthetic(self._end_replay() or self._flush_all())

    # ------------------------------------------------------------------ dispatch

    def _request(self, method: str, rid: int | str | None, params: Raw, from_: Direction) -> list[Item]:
        if self._late_replay and from_ == "client":
            # made up here, not the request's: the protocol says nowhere that the history ended
            return [*_synthetic(self._end_replay()), *self._request(method, rid, params, from_)]
        pending = _Pending(method)
        if self._pending is NO_TABLE:
            self._pending = table(self, "request", PENDING_REQUESTS)
        put(self._pending, (from_, rid), pending)
        handler = _REQUESTS.get(method)
        return handler(self, rid, params, pending) if handler is not None else [Passthrough(method=method)]

    def _response(self, msg: _Rpc, from_: Direction) -> list[Item]:
        asker: Direction = "client" if from_ == "agent" else "agent"
        rid = msg.id if not isinstance(msg.id, UnsetType) else None
        pending = self._pending.pop((asker, rid), None)
        if not self._pending:  # answered: a session left waiting keeps no table of requests
            self._pending = NO_TABLE
        if pending is None:
            return [Passthrough()]  # answers nothing (late answer, duplicate error with id null)
        method = pending.method
        handler = _RESPONSES.get(method)
        if handler is not None:
            out = handler(self, rid, pending, msg)
        elif msg.error is not None:
            out = self._rpc_error(method, msg.error)
        else:
            out = [Passthrough(method=method)]
        out.insert(0, _SOURCES.get(method) or Source(method=method))
        return out

    def _rpc_error(self, method: str, err: _RpcError) -> list[Item]:
        if err.code == -32601 and method.startswith("_"):
            return [Passthrough(method=method)]  # an extension the other side does not know: expected
        return [Error(message=_rpc_error_message(err), error_type=_rpc_error_type(err.code), recoverable=True)]

    # ------------------------------------------------------------------ helpers

    @property
    def _replaying(self) -> bool:
        return bool(self._loads) or self._late_replay

    def _end_replay(self) -> list[Item]:
        """The replayed turn a load left open ends (a request of the client's, or the end)."""
        if not self._late_replay:
            return []
        out = self._replayed(list(self._flush_all()))
        out.append(Emit(body=TurnComplete(reason="ok"), origin="replay"))
        self._late_replay = self._replay_turn = False
        self._last_variant = None
        return out

    def _active(self) -> _Prompt | None:
        return self._current

    def _new_id(self, kind: str) -> str:
        self._anon += 1
        return f"acp-{kind}-{self._anon}"

    def _flush(self, kind: _Kind) -> list[Item]:
        buf = self._buffers[kind]
        if buf is None:
            return []
        buffers = self._buffers
        buffers[kind] = None
        if buffers["message"] is None and buffers["thought"] is None:
            self._buffers = _NO_BUFFERS  # a session left waiting keeps no table
        text = "".join(buf.parts)
        if kind == "thought":
            return _from(buf.subagent, [Reasoning(reasoning_id=buf.the_id, redacted=False, text=text)])
        active = self._active()
        if active is not None and not self._replaying and buf.subagent is None:
            active.last_text = text
        return _from(buf.subagent, [AssistantMessage(message_id=buf.the_id, text=text)])

    def _flush_all(self) -> list[Item]:
        return [*self._flush("thought"), *self._flush("message")]

    def _replayed(self, items: list[Item]) -> list[Item]:
        if not self._replaying:
            return items
        return [
            Emit(body=i, origin="replay")
            if isinstance(i, Body)
            else msgspec.structs.replace(i, origin="replay")
            if isinstance(i, Problem) or (isinstance(i, Emit) and i.origin is None)
            else i
            for i in items
        ]

    def _apply_config(self, options: Sequence[_ConfigOption] | None) -> tuple[str | None, str | None]:
        mode = model = None
        for opt in options or ():
            if opt.category == "mode" and isinstance(opt.current_value, str):
                mode = opt.current_value
            elif opt.category == "model" and isinstance(opt.current_value, str):
                model = opt.current_value
        return mode, model

    def _session_state(self, result: _SessionResult | None) -> tuple[str | None, str | None]:
        if result is None:
            return None, None
        mode, model = self._apply_config(result.config_options)
        if mode is None and result.modes is not None:
            mode = result.modes.current_mode_id
        if model is None and result.models is not None:
            model = result.models.current_model_id
        return mode, model

    def _mode_update(self, mode: str | None, model: str | None, *, always: bool) -> list[Item]:
        changed = (mode is not None and mode != self._mode) or (model is not None and model != self._model)
        self._mode = _one(mode) or self._mode
        self._model = _one(model) or self._model
        if (mode is None and model is None) or not (changed or always):
            return []
        return [ModeUpdate(mode_id=mode, model=model)]

    # ------------------------------------------------------------------ initialize / sessions

    def _req_passthrough(self, rid: int | str | None, params: Raw, pending: _Pending) -> list[Item]:
        return [Passthrough()]

    def _res_initialize(self, rid: int | str | None, pending: _Pending, msg: _Rpc) -> list[Item]:
        if msg.error is not None:
            return self._rpc_error(pending.method, msg.error)
        result = _INITIALIZED.decode(msg.result) if _given(msg.result) else None
        if result is None:
            return [Passthrough()]
        if result.agent_info is not None:
            name, version = result.agent_info.name, result.agent_info.version
            agent = _BRIDGES.get(name) if name else None
            if agent is not None:
                self.agent, self._via, self._via_version = agent, _one(name), _one(version)
            else:
                if name:
                    self.agent = sys.intern(name)
                self._agent_version = _one(version)
        elif _offers_claude_login(result.auth_methods):
            self.agent = "claude-code"  # an older claude-code-acp: no agentInfo, Claude Code's login
        caps = result.agent_capabilities if _given(result.agent_capabilities) else None
        return [SessionInfo(capabilities=caps)] if caps is not None else [Passthrough()]

    def _req_new(self, rid: int | str | None, params: Raw, pending: _Pending) -> list[Item]:
        view = _SESSION_PARAMS.decode(params) if _given(params) else _SessionParams()
        pending.extra = view
        return [Passthrough()]

    def _res_new(self, rid: int | str | None, pending: _Pending, msg: _Rpc) -> list[Item]:
        if msg.error is not None:
            return self._rpc_error(pending.method, msg.error)
        result = _SESSION_RESULT.decode(msg.result) if _given(msg.result) else None
        request: _SessionParams = pending.extra or _SessionParams()
        mode, model = self._session_state(result)
        self._cost = 0.0  # a new session: its cumulative cost starts at zero
        self._late_cost = False
        self._cwd = request.cwd or self._cwd
        record = SessionRecord(
            id="",
            agent="",
            protocol="",
            native_session_id=result.session_id if result is not None else None,
            cwd=request.cwd,
            model=model,
            mode=mode,
            agent_version=self._agent_version,
            via=self._via,
            via_version=self._via_version,
        )
        return [SessionCreated(session_id="", record=record), *self._mode_update(mode, model, always=True)]

    def _req_load(self, rid: int | str | None, params: Raw, pending: _Pending) -> list[Item]:
        view = _SESSION_PARAMS.decode(params) if _given(params) else _SessionParams()
        pending.extra = view
        self._cwd = view.cwd or self._cwd
        self._loads = recent(self._loads, PENDING_REQUESTS)
        self._loads.add(rid)
        self._last_user_id = None
        self._last_variant = None
        out: list[Item] = _synthetic(self._flush_all())
        record = SessionRecord(
            id="",
            agent="",
            protocol="",
            native_session_id=view.session_id,
            cwd=view.cwd,
            agent_version=self._agent_version,
            via=self._via,
            via_version=self._via_version,
        )
        return [SessionResumed(session_id="", record=record), *out]

    def _res_load(self, rid: int | str | None, pending: _Pending, msg: _Rpc) -> list[Item]:
        out: list[Item] = []
        if msg.error is None and self._replay_turn and self._last_variant == "user_message_chunk":
            # answered right after a replayed prompt: its answer may still come (Gemini CLI 0.31)
            self._late_replay = True
        else:
            out += self._replayed(list(self._flush_all()))
            if self._replay_turn:
                out.append(Emit(body=TurnComplete(reason="ok"), origin="replay"))
                self._replay_turn = False
            self._last_variant = None
        self._loads.discard(rid)
        if not self._loads:
            self._loads = NO_RECENT
        if msg.error is not None:
            return out + self._rpc_error(pending.method, msg.error)
        result = _SESSION_RESULT.decode(msg.result) if _given(msg.result) else None
        mode, model = self._session_state(result)
        out += self._mode_update(mode, model, always=True)
        return out or [Passthrough()]

    def _req_resume(self, rid: int | str | None, params: Raw, pending: _Pending) -> list[Item]:
        view = _SESSION_PARAMS.decode(params) if _given(params) else _SessionParams()
        pending.extra = view
        self._cwd = view.cwd or self._cwd
        record = SessionRecord(
            id="",
            agent="",
            protocol="",
            native_session_id=view.session_id,
            cwd=view.cwd,
            agent_version=self._agent_version,
            via=self._via,
            via_version=self._via_version,
        )
        return [SessionResumed(session_id="", record=record)]

    def _res_resume(self, rid: int | str | None, pending: _Pending, msg: _Rpc) -> list[Item]:
        if msg.error is not None:
            return self._rpc_error(pending.method, msg.error)
        result = _SESSION_RESULT.decode(msg.result) if _given(msg.result) else None
        return self._mode_update(*self._session_state(result), always=True) or [Passthrough()]

    def _req_with_params(self, rid: int | str | None, params: Raw, pending: _Pending) -> list[Item]:
        """set_mode / set_model / set_config_option: the response says whether it applied."""
        view = _SESSION_PARAMS.decode(params) if _given(params) else _SessionParams()
        pending.extra = view
        return [Passthrough()]

    def _res_set_mode(self, rid: int | str | None, pending: _Pending, msg: _Rpc) -> list[Item]:
        if msg.error is not None:
            return self._rpc_error(pending.method, msg.error)
        request: _SessionParams = pending.extra or _SessionParams()
        return self._mode_update(request.mode_id, None, always=False) or [Passthrough()]

    def _res_set_model(self, rid: int | str | None, pending: _Pending, msg: _Rpc) -> list[Item]:
        if msg.error is not None:
            return self._rpc_error(pending.method, msg.error)
        request: _SessionParams = pending.extra or _SessionParams()
        return self._mode_update(None, request.model_id, always=False) or [Passthrough()]

    def _res_set_config(self, rid: int | str | None, pending: _Pending, msg: _Rpc) -> list[Item]:
        if msg.error is not None:
            return self._rpc_error(pending.method, msg.error)
        result = _SESSION_RESULT.decode(msg.result) if _given(msg.result) else None
        mode, model = self._apply_config(result.config_options if result is not None else None)
        return self._mode_update(mode, model, always=False) or [Passthrough()]

    # ------------------------------------------------------------------ prompts and turns

    def _req_prompt(self, rid: int | str | None, params: Raw, pending: _Pending) -> list[Item]:
        view = _PROMPT_PARAMS.decode(params)
        texts = [t for t in (_block_text(b) for b in view.prompt) if t is not None]
        prompt = _Prompt(f"prompt-{rid}", _join_blocks(texts), _images(view.prompt))
        out: list[Item] = []
        if not self._prompts:
            out += self._flush_all()
            self._prompts = table(self, "prompt", OPEN_ITEMS)
        self._prompts[rid] = prompt
        out.append(MessageAccepted(session_id="", message_id=prompt.message_id))
        if len(self._prompts) == 1:
            out += self._start(prompt, queued=False)
        return out

    def _start(self, prompt: _Prompt, *, queued: bool) -> list[Item]:
        prompt.active = True
        self._current = prompt
        prompt.cost_at_start = self._cost
        self._last_variant = None
        return [
            TurnStart(),
            MessageStarted(session_id="", message_id=prompt.message_id),
            UserMessage(message_id=prompt.message_id, text=prompt.text, images=prompt.images, queued=queued or None),
        ]

    def _res_prompt(self, rid: int | str | None, pending: _Pending, msg: _Rpc) -> list[Item]:
        prompt = self._prompts.pop(rid, None)
        if prompt is None:
            return [Passthrough()]
        error = msg.error
        result = _PROMPT_RESULT.decode(msg.result) if error is None and _given(msg.result) else _PromptResult()
        native = result.stop_reason
        if error is not None:
            native = "cancelled" if prompt.cancel_requested else "error"
        stop: _Stop = _STOP_REASON.get(native, "error" if error is not None else "end_turn")
        failure = prompt.failure if error is None and stop == "end_turn" else None
        if failure is not None:  # a failed model call that the agent answers as an ended turn
            stop = "error"
        tokens = self._tokens(result.usage) or self._quota_tokens(result.meta)
        out: list[Item] = []
        if prompt.active:  # else: a queued prompt answered before its turn began, no turn of its own
            out += self._end_turn(prompt, native, stop, tokens, error)
            self._current = None
        info = failure
        if error is not None:
            info = ErrorInfo(message=_rpc_error_message(error), error_type=_rpc_error_type(error.code))
        cost = self._cost_delta(prompt)
        usage = CompletionUsage(tokens=tokens, cost=cost) if tokens is not None or cost is not None else None
        completion = Completion(
            stop_reason=stop, text=prompt.last_text, usage=usage, error=info if stop == "error" else None
        )
        out.append(MessageCompleted(session_id="", message_id=prompt.message_id, result=completion))
        for nxt in self._prompts.values():
            if not nxt.active:
                out += self._start(nxt, queued=True)
            break
        if not self._prompts:  # the turn is over: most sessions now wait, many for good
            self._prompts = NO_TABLE
        return out

    def _tokens(self, usage: _TurnUsage | None) -> Tokens | None:
        if usage is None:
            return None
        return Tokens(
            input=usage.input_tokens,
            output=usage.output_tokens,
            total=usage.total_tokens,
            cache_read=usage.cached_read_tokens,
            cache_write=usage.cached_write_tokens,
            reasoning=usage.thought_tokens,
        )

    def _quota_tokens(self, meta: _PromptMeta | None) -> Tokens | None:
        """Gemini CLI (0.61.0) counts the turn in ``_meta.quota.token_count`` (output without thoughts)."""
        count = meta.quota.token_count if meta is not None and meta.quota is not None else None
        if count is None or (count.input_tokens is None and count.output_tokens is None):
            return None
        total = (count.input_tokens or 0) + (count.output_tokens or 0)
        return Tokens(input=count.input_tokens, output=count.output_tokens, total=total)

    def _cost_delta(self, prompt: _Prompt) -> Cost | None:
        if self._cost is None or prompt.cost_at_start is None or not prompt.active:
            return None  # no baseline: a loaded or resumed session's earlier cost is unknown
        amount = round(self._cost - prompt.cost_at_start, 10)
        return Cost(amount=amount, currency="USD", source="agent") if self._cost_currency == "USD" else None

    def _end_turn(
        self, prompt: _Prompt, native: str, stop: str, tokens: Tokens | None, error: _RpcError | None
    ) -> list[Item]:
        out: list[Item] = list(self._flush_all())
        if error is not None and stop == "error":
            out.append(
                Error(message=_rpc_error_message(error), error_type=_rpc_error_type(error.code), recoverable=True)
            )
        if stop in ("cancelled", "error"):  # the agent gives its open calls no final status
            out.extend(
                Emit(body=call.body("failed"), subagent_id=call.subagent, synthetic=True)
                for call in self._open_calls()
                if call.prompt is prompt
            )
        cost = self._cost_delta(prompt)
        if tokens is not None or cost is not None:
            out.append(Usage(tokens=tokens, cost=cost, scope="turn"))
        self._late_cost = stop == "cancelled"
        reason: Literal["ok", "interrupt"] = "interrupt" if stop in ("cancelled", "error") else "ok"
        out.append(TurnComplete(reason=reason, stop_reason=native or None))
        return out

    def _note_cancel(self, params: Raw) -> list[Item]:
        for prompt in self._prompts.values():
            prompt.cancel_requested = True
        return [Passthrough(method="session/cancel")]

    def _cancel_request(self, params: Raw) -> list[Item]:
        """``$/cancel_request`` either way: a pending permission request is resolved cancelled."""
        view = _CANCEL_REQUEST.decode(params) if _given(params) else _CancelRequest()
        for side in ("agent", "client"):
            pending = self._pending.get((side, view.request_id))
            if pending is None:
                continue
            if pending.method in ("session/request_permission", "elicitation/create"):
                del self._pending[(side, view.request_id)]
                if not self._pending:
                    self._pending = NO_TABLE
                return [RequestResolved(request_id=str(view.request_id), outcome="cancelled")]
            if pending.method == "session/prompt":
                return self._note_cancel(params)
        return [Passthrough(method="$/cancel_request")]

    # ------------------------------------------------------------------ session/update

    def _update(self, params: Raw) -> list[Item]:
        try:
            update = _UPDATE.decode(params).update
        except (msgspec.DecodeError, msgspec.ValidationError):
            return self._update_slowly(params)
        return self._on_update(update)

    def _on_update(self, update: Any) -> list[Item]:
        """An update decoded by its tagged view (one of ``_Update.update``'s)."""
        variant, handler = _UPDATES[type(update)]
        out = handler(self, update)
        self._last_variant = variant
        if variant not in _NO_OUTPUT:
            self._late_cost = False
        return self._replayed(out) if self._replaying else out

    def _update_slowly(self, params: Raw) -> list[Item]:
        """An update the one-pass view does not take (an unknown variant, bad input): the
        params, then the head, then the variant's view, each decoded alone, so that bad input
        is reported at the same place (``$.content...``) and an unknown variant passed through."""
        view = _UPDATE_PARAMS.decode(params)
        variant = _UPDATE_HEAD.decode(view.update).session_update
        known = _VARIANTS.get(variant)
        if known is None:
            return [Passthrough(method="session/update")]
        decoder, handler = known
        out = handler(self, decoder.decode(view.update))
        self._last_variant = variant
        if variant not in _NO_OUTPUT:
            self._late_cost = False
        return self._replayed(out)

    def _notices_without_id(self) -> bool:
        """Whether this agent sends its own notices as chunks without ``messageId`` (its model
        text always has one); an agent of unknown version is taken to be a current one."""
        first = _NOTICE_WITHOUT_ID.get(self._via or "")
        if first is None:
            return False
        version = version_tuple(self._via_version)
        return version is None or version >= first

    def _chunk(self, kind: _Kind, view: _Chunk) -> list[Item]:
        block = view.content
        text = _block_text(block) if block is not None else None
        meta = view.meta.claude_code if view.meta is not None else None
        sub = meta.parent_tool_use_id if meta is not None else None
        notice = (meta is not None and meta.kind == "informational") or (
            kind == "message" and view.message_id is None and self._notices_without_id()
        )
        if notice and text is not None:
            # a notice of the agent's own, not the model's text; live even inside a load
            return [Emit(body=WarningBody(message=text, source="agent"), subagent_id=sub, origin="live")]
        if text is None:
            return [Passthrough(method="session/update")]
        variant = "agent_message_chunk" if kind == "message" else "agent_thought_chunk"
        out: list[Item] = []
        buf = self._buffers[kind]
        if buf is not None and (
            view.message_id != buf.native_id
            or buf.subagent != sub
            or (view.message_id is None and self._last_variant != variant)
        ):
            out += self._flush(kind)
            buf = None
        if sub is not None:
            out += self._spawned(sub)
        if buf is None:
            buf = _Buffer(view.message_id or self._new_id(kind), view.message_id, sub)
            if self._buffers is _NO_BUFFERS:
                self._buffers = {"message": None, "thought": None}
            self._buffers[kind] = buf
        buf.size += len(text)
        if buf.size <= BUFFER_TEXT:
            buf.parts.append(text)
        elif buf.size - len(text) <= BUFFER_TEXT:  # the limit is crossed now: said once
            out.append(buffer_warning(kind, buf.the_id))
        delta: Body
        if kind == "thought":
            delta = ReasoningDelta(reasoning_id=buf.the_id, text=text)
        else:
            delta = AssistantDelta(message_id=buf.the_id, text=text)
        out.append(on_thread(delta, sub))
        return out

    def _agent_chunk(self, view: _Chunk) -> list[Item]:
        return self._chunk("message", view)

    def _thought_chunk(self, view: _Chunk) -> list[Item]:
        return self._chunk("thought", view)

    def _user_chunk(self, view: _Chunk) -> list[Item]:
        block = view.content
        text = _block_text(block) if block is not None else None
        if text is not None and text.startswith(_INJECTED):
            return [Passthrough(method="session/update")]  # the agent's own context, not the user's words
        images = _images([block]) if block is not None else None
        active = self._active()
        if not self._replaying and active is not None and text is not None and text in active.text:
            return [Passthrough(method="session/update")]  # the live prompt echoed back: already reported
        out: list[Item] = []
        new_message = (
            view.message_id != self._last_user_id
            if view.message_id is not None
            else self._last_variant != "user_message_chunk"
        )
        if self._replaying and new_message:
            out += self._flush_all()
            if self._replay_turn:
                out.append(TurnComplete(reason="ok"))
            out.append(TurnStart())
            self._replay_turn = True
        if new_message or self._last_user_id is None:
            self._last_user_id = view.message_id or self._new_id("user")
        out.append(UserMessage(message_id=self._last_user_id, text=text or "", images=images))
        return out

    # tool calls ---------------------------------------------------------

    def _tool_call(self, view: _ToolCallView) -> list[Item]:
        """``tool_call`` (an upsert) and ``tool_call_update`` (a patch) alike."""
        return self._tool(view)[0]

    def _merge(self, call: _Merged, view: _ToolCallView) -> tuple[bool, list[Item]]:
        """Apply a ToolCall / ToolCallUpdate; returns (something changed, content events)."""
        changed = False
        extra: list[Item] = []
        meta = view.meta
        name = view.name
        if not name and meta is not None and meta.claude_code is not None and meta.claude_code.tool_name:
            name = _BRIDGE_TOOLS.get(meta.claude_code.tool_name, meta.claude_code.tool_name)
        if name and call.name is None:  # the first name sticks: one tool per call
            call.name = sys.intern(name)  # tool names repeat from call to call, session to session
        if view.title is not None:
            changed = changed or view.title != call.title
            call.title = view.title
        if view.kind is not None:
            category = _CATEGORY.get(view.kind, "other")
            changed = changed or category != call.category
            call.category = category
            if call.name is None:
                call.name = sys.intern(view.kind)
        if view.locations is not None:
            locations = [Location(path=loc.path, line=loc.line) for loc in view.locations] or None
            changed = changed or locations != call.locations
            call.locations = locations
        if _given(view.raw_input):
            changed = changed or call.input is None or bytes(call.input) != bytes(view.raw_input)
            call.input = view.raw_input.copy()  # a view into the message: not the message kept
        if _given(view.raw_output):
            changed = True
            call.output = view.raw_output.copy()
        for item in view.content or ():
            if item.type == "diff" and item.path is not None and item.new_text is not None:
                path = self._absolute(item.path)
                pair = (item.old_text, item.new_text)
                if call.diffs.get(path) == pair:
                    continue
                if call.diffs is _NO_DIFFS:
                    call.diffs = {}
                call.diffs[path] = pair
                kind = _CHANGE_KINDS.get(item.meta.kind) if item.meta is not None and item.meta.kind else None
                if kind is None:  # none given, or a word not known
                    kind = "add" if item.old_text is None else "update"
                extra.append(
                    FileDiff(
                        call_id=call.call_id,
                        path=path,
                        diff=_unified(path, item.old_text, item.new_text),
                        change_kind=kind,
                    )
                )
            elif item.type == "terminal" and item.terminal_id:
                self._terminal_tables()[0][item.terminal_id] = call.call_id
        if meta is not None:
            extra.extend(
                CommandOutput(call_id=call.call_id, stream="merged", delta=out.data)
                for out in (meta.terminal_output_delta, meta.terminal_output)
                if out is not None and out.data
            )
            if meta.terminal_exit is not None and meta.terminal_exit.exit_code is not None:
                changed = changed or call.exit_code != meta.terminal_exit.exit_code
                call.exit_code = meta.terminal_exit.exit_code
        return changed or bool(view.content), extra

    def _known(self, call_id: str) -> tuple[_Merged | None, bool]:
        """The merged fields of a call the core knows, and whether it is still open."""
        entry = self.calls.get(call_id)
        if entry is not None:
            return entry.note if isinstance(entry.note, _Merged) else None, True
        entry = self.calls.ended(call_id)  # ACP agents patch calls after their end
        return (entry.note if entry is not None and isinstance(entry.note, _Merged) else None), False

    def _open_calls(self) -> list[_Merged]:
        """The merged fields of the calls still open, oldest first."""
        return [c.note for c in self.calls if isinstance(c.note, _Merged)]

    def _tool(self, view: _ToolCallView) -> tuple[list[Item], _Merged | None]:
        """A ``tool_call`` or ``tool_call_update``: its items, and the call's merged fields."""
        if not view.tool_call_id:
            return [Problem(error=MalformedMessage("tool call without toolCallId"))], None
        out: list[Item] = []
        call, is_open = self._known(view.tool_call_id)
        known = call is not None
        ended = known and not is_open
        if call is None:
            call = _Merged(view.tool_call_id, None if self._replaying else self._active())
        claude = view.meta.claude_code if view.meta is not None else None
        if claude is not None and claude.parent_tool_use_id and call.subagent is None:
            call.subagent = claude.parent_tool_use_id  # later updates may not say it again
        changed, extra = self._merge(call, view)
        if not known:
            if call.category is None:
                call.category = "other"
            out.append(Emit(body=call.body("started"), note=call))  # the core keeps the merged fields
        out += extra
        status = view.status
        spawns = call.name in SUBAGENT_TOOLS
        if spawns and not call.spawned and (status in ("completed", "failed") or _prompt_of(call.input)):
            out.append(self._subagent_started(call))
        if status in ("completed", "failed") and not ended:
            call.prompt = None  # only an open call is matched to its turn: the prompt is not kept
            if spawns:  # the sub-agent ends, then the call that ran it returns
                phase: Literal["completed", "failed"] = "completed" if status == "completed" else "failed"
                out.append(Subagent(subagent_id=call.call_id, phase=phase, call_id=call.call_id))
            out.append(call.body("completed" if status == "completed" else "failed"))
        elif known and (changed or status is not None):
            out.append(call.body("updated"))
        if not out:
            return [Passthrough(method="session/update")], call  # only vendor `_meta` the model has no place for
        if call.subagent is None:
            return out, call
        return [*self._spawned(call.subagent), *_from(call.subagent, out)], call

    def _subagent_started(self, call: _Merged) -> Subagent:
        """The sub-agent an Agent/Task call runs, once its input says what it is asked."""
        call.spawned = True
        return subagent_started(call.call_id, _agent_input(call.input))

    def _spawned(self, subagent: str) -> list[Item]:
        """The sub-agent's start, when one of its events comes before its input was complete."""
        call, _ = self._known(subagent)
        if call is None or call.spawned or call.name not in SUBAGENT_TOOLS:
            return []
        return _from(call.subagent, [self._subagent_started(call)])

    # permissions --------------------------------------------------------

    def _req_permission(self, rid: int | str | None, params: Raw, pending: _Pending) -> list[Item]:
        view = _PERM_PARAMS.decode(params)
        tc = view.tool_call
        out: list[Item] = []
        call, _ = self._known(tc.tool_call_id)
        if call is None:  # the call's first sight (Gemini CLI sends no tool_call)
            if tc.tool_call_id:
                out, call = self._tool(tc)
        else:
            # codex-acp titles a permission request with the question: 2.1.1 asks "Run command"
            # about a call it announced as ``touch made.txt`` (2.6.0 repeats the command), both
            # ask "Edit files" about "Editing files" (1.6.2 sends no title); over it the request's
            # title does not rename a call that has one
            if call.title and tc.title is not None and self._via is not None and self.agent == "codex":
                tc = msgspec.structs.replace(tc, title=None)  # the question's heading, not the call's title
            _, extra = self._merge(call, tc)
            out += [e for e in extra if isinstance(e, FileDiff)]
        options = [PermissionOption(id=o.option_id, kind=o.kind, label=o.name) for o in view.options]
        ref = ToolCallRef(
            call_id=tc.tool_call_id,
            tool=(call.name if call is not None else None) or tc.kind or "unknown",
            title=(call.title if call is not None else None) or tc.title or "",
            input=call.input if call is not None else None,
            category=call.category if call is not None else None,
        )
        request = PermissionRequest(request_id=str(rid), tool_call=ref, options=options, detail=self._detail(ref))
        sub = call.subagent if call is not None else None
        pending.extra = ({o.option_id: o.kind for o in view.options}, sub)
        out.append(on_thread(request, sub))
        return out

    def _detail(self, ref: ToolCallRef) -> PermissionDetail | None:
        if ref.category != "execute" or not isinstance(ref.input, Raw):
            return None
        try:
            view = _COMMAND_INPUT.decode(ref.input)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        command = " ".join(view.command) if isinstance(view.command, list) else view.command
        if command is None and view.cwd is None:
            return None
        return PermissionDetail(command=command, cwd=view.cwd)

    def _res_permission(self, rid: int | str | None, pending: _Pending, msg: _Rpc) -> list[Item]:
        kinds: dict[str, str]
        kinds, sub = pending.extra if isinstance(pending.extra, tuple) else ({}, None)
        result = _PERM_RESULT.decode(msg.result) if msg.error is None and _given(msg.result) else _PermResult()
        outcome = result.outcome
        resolved: RequestResolved
        if outcome is None or outcome.outcome != "selected" or outcome.option_id is None:
            resolved = RequestResolved(request_id=str(rid), outcome="cancelled")
        else:
            answer = {"optionId": outcome.option_id, "kind": kinds.get(outcome.option_id)}
            resolved = RequestResolved(
                request_id=str(rid), outcome="answered", answer=answer, option_id=outcome.option_id
            )
        return [on_thread(resolved, sub)]

    def _req_elicitation(self, rid: int | str | None, params: Raw, pending: _Pending) -> list[Item]:
        """A form the agent asks the user to fill (claude-agent-acp's AskUserQuestion): each
        field of ``requestedSchema`` is one question, its ``oneOf`` / ``enum`` the options."""
        try:
            view = _ELICITATION.decode(params)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return [Passthrough()]
        fields = view.requested_schema.properties if view.requested_schema is not None else {}
        questions = [
            Question(
                id=name,
                prompt=f.title or f.description or view.message,
                header=view.message if (f.title or f.description) else None,
                multi_select=f.type == "array",
                allow_free_text=not _choices(f),
                options=_choices(f),
            )
            for name, f in fields.items()
        ]
        if not questions:  # a url elicitation, or a form without fields: the message is the question
            questions = [
                Question(id=str(rid), prompt=view.message, multi_select=False, allow_free_text=False, options=[])
            ]
        return [UserQuestion(request_id=str(rid), blocking=True, questions=questions)]

    def _res_elicitation(self, rid: int | str | None, pending: _Pending, msg: _Rpc) -> list[Item]:
        """``accept`` (with the form's ``content``) answers it; ``decline`` and ``cancel`` do not."""
        if msg.error is not None or not _given(msg.result):
            return [RequestResolved(request_id=str(rid), outcome="cancelled")]
        action = _ELICITATION_RESULT.decode(msg.result).action
        outcome: Literal["answered", "cancelled"] = "answered" if action == "accept" else "cancelled"
        return [RequestResolved(request_id=str(rid), outcome=outcome, answer=msg.result)]

    # client file system and terminals ----------------------------------

    def _absolute(self, path: str) -> str:
        """A diff's path: absolute as ACP asks, or else (Gemini CLI 0.31 names the file relative
        to the session's directory) joined to the session's ``cwd`` when known."""
        if path.startswith("/") or not self._cwd or not self._cwd.startswith("/"):
            return path
        return posixpath.normpath(posixpath.join(self._cwd, path))

    def _linked(self, path: str) -> _Merged | None:
        """The newest open call that names ``path`` (a client fs request of the agent's)."""
        return next((call for call in reversed(self._open_calls()) if path in call.paths()), None)

    def _req_fs_read(self, rid: int | str | None, params: Raw, pending: _Pending) -> list[Item]:
        view = _FS_PARAMS.decode(params)
        call = self._linked(view.path)
        if call is not None and view.path in call.diffs and view.line in (None, 1) and view.limit is None:
            # the whole file, read for a call that reported a diff of it: its text is kept from
            # the answer, for the write that follows (no other read's text is kept)
            pending.extra = view.path
        return [call.body("updated")] if call is not None else [Passthrough()]

    def _res_fs_read(self, rid: int | str | None, pending: _Pending, msg: _Rpc) -> list[Item]:
        if msg.error is not None:
            return self._rpc_error(pending.method, msg.error)
        if isinstance(pending.extra, str):
            content = _FS_READ_RESULT.decode(msg.result).content
            self._read = (pending.extra, content) if content is not None else None
        return [Passthrough()]

    def _req_fs_write(self, rid: int | str | None, params: Raw, pending: _Pending) -> list[Item]:
        view = _FS_PARAMS.decode(params)
        call = self._linked(view.path)
        content = view.content or ""
        read, self._read = self._read, None  # a read is what the next write replaces, once
        base = read[1] if read is not None and read[0] == view.path else None
        if call is not None:
            old, new = call.diffs.get(view.path, (None, None))
            if new == content or (base is not None and _applied(base, old, new, content)):
                # the write of a diff already reported: the whole file, or only the text it
                # changes (claude-code-acp 0.16.2's Edit) applied to the file as the client read it
                return [call.body("updated")]
            if view.path in call.diffs:
                if base is not None:
                    old = base  # the file as read, not the diff's excerpt of it
                call.diffs[view.path] = (old, content)
                return [
                    FileDiff(
                        call_id=call.call_id,
                        path=view.path,
                        diff=_unified(view.path, old, content),
                        change_kind="update",
                    )
                ]
        # the old content is unknown: the whole file as written
        return [
            FileDiff(
                call_id=call.call_id if call is not None else None,
                path=view.path,
                diff=_unified(view.path, None, content),
                change_kind="write",
            )
        ]

    def _req_terminal_create(self, rid: int | str | None, params: Raw, pending: _Pending) -> list[Item]:
        return [Passthrough()]

    def _terminal_tables(self) -> tuple[Bounded[str, str], Bounded[str, str]]:
        """The tables of terminals, made at first use; their evictions are reported with the
        other tables' (:func:`~normalize.adapters._limits.table`)."""
        if self._terminals is None or self._terminal_seen is None:
            self._terminals = table(self, "terminal", OPEN_CALLS)
            self._terminal_seen = table(self, "client terminal", OPEN_CALLS)
        return self._terminals, self._terminal_seen

    def _res_terminal_create(self, rid: int | str | None, pending: _Pending, msg: _Rpc) -> list[Item]:
        if msg.error is not None:
            return self._rpc_error(pending.method, msg.error)
        result = _TERM_CREATE_RESULT.decode(msg.result)
        self._terminal_tables()[1][result.terminal_id] = ""
        return [Passthrough()]

    def _req_terminal(self, rid: int | str | None, params: Raw, pending: _Pending) -> list[Item]:
        view = _TERM_PARAMS.decode(params)
        pending.extra = view.terminal_id
        return [Passthrough()]

    def _res_terminal_output(self, rid: int | str | None, pending: _Pending, msg: _Rpc) -> list[Item]:
        if msg.error is not None:
            return self._rpc_error(pending.method, msg.error)
        terminal_id: str = pending.extra or ""
        result = _TERM_OUTPUT_RESULT.decode(msg.result)
        terminals, seen_of = self._terminal_tables()
        call, _ = self._known(terminals.get(terminal_id, ""))
        if call is None:
            return [Passthrough()]
        seen = seen_of.get(terminal_id, "")
        delta = result.output[len(seen) :] if result.output.startswith(seen) else result.output
        seen_of[terminal_id] = result.output
        out: list[Item] = []
        if delta:
            out.append(CommandOutput(call_id=call.call_id, stream="merged", delta=delta))
        status = result.exit_status
        if status is not None and status.exit_code is not None and status.exit_code != call.exit_code:
            call.exit_code = status.exit_code
            out.append(call.body("updated"))
        return out or [Passthrough()]

    def _res_terminal_exit(self, rid: int | str | None, pending: _Pending, msg: _Rpc) -> list[Item]:
        if msg.error is not None:
            return self._rpc_error(pending.method, msg.error)
        terminal_id: str = pending.extra or ""
        status = _EXIT_STATUS.decode(msg.result) if _given(msg.result) else _ExitStatus()
        call, _ = self._known(self._terminal_tables()[0].get(terminal_id, ""))
        if call is None or status.exit_code is None or status.exit_code == call.exit_code:
            return [Passthrough()]
        call.exit_code = status.exit_code
        return [call.body("updated")]

    def _res_terminal_release(self, rid: int | str | None, pending: _Pending, msg: _Rpc) -> list[Item]:
        if self._terminal_seen is not None:
            self._terminal_seen.pop(pending.extra or "", None)
        if msg.error is not None:
            return self._rpc_error(pending.method, msg.error)
        return [Passthrough()]

    # other variants -----------------------------------------------------

    def _plan(self, view: _PlanUpdate) -> list[Item]:
        return [Plan(entries=self._entries(view.entries))]

    def _entries(self, entries: Sequence[_PlanEntry]) -> list[PlanEntry]:
        return [
            PlanEntry(
                content=e.content,
                status=_PLAN_STATUS.get(e.status, "pending"),
                priority=e.priority,
            )
            for e in entries
        ]

    def _plan_update(self, view: _PlanContentUpdate) -> list[Item]:
        plan = view.plan
        if plan is None:
            return [Passthrough(method="session/update")]
        if plan.type == "items" and plan.entries is not None:
            return [Plan(entries=self._entries(plan.entries))]
        if plan.type == "markdown" and plan.content is not None:
            return [Plan(entries=[], explanation=plan.content)]
        return [Passthrough(method="session/update")]

    def _commands(self, view: _CommandsUpdate) -> list[Item]:
        entry = CommandEntry  # (a local: read once, not per command)
        return [
            CommandsUpdate(
                commands=[
                    entry(
                        name=c.name, description=c.description or None, argument_hint=c.input.hint if c.input else None
                    )
                    for c in view.available_commands
                ]
            )
        ]

    def _current_mode(self, view: _ModeUpdate) -> list[Item]:
        mode = view.current_mode_id
        self._mode = mode or self._mode
        return [ModeUpdate(mode_id=mode)]

    def _config(self, view: _ConfigUpdate) -> list[Item]:
        mode, model = self._apply_config(view.config_options)
        return self._mode_update(mode, model, always=True) or [Passthrough(method="session/update")]

    def _info(self, view: _InfoUpdate) -> list[Item]:
        codex = view.meta.codex if view.meta is not None else None
        status = codex.thread_status.type if codex is not None and codex.thread_status is not None else None
        if status == "systemError":
            # codex-acp's only sign of a failed model call: the error's text follows as agent text
            message = "the agent reported a system error (codex threadStatus systemError)"
            if self._current is not None:  # the turn failed, whatever the prompt's answer says
                self._current.failure = ErrorInfo(message=message, error_type="systemError")
            return [Error(message=message, error_type="systemError", recoverable=False)]
        items: list[Item] = []
        if codex is not None and codex.error is not None and codex.error.message:
            # codex-acp's notice of a failed model call it retries ("Reconnecting... 1/1"); a
            # failure it gives up on is the systemError status that follows
            items.append(Emit(body=WarningBody(message=codex.error.message, source="agent"), origin="live"))
        if not isinstance(view.title, UnsetType):
            items.append(SessionInfo(title=view.title if view.title is not None else ""))
        # only updatedAt / other `_meta`: nothing the model holds
        return items or [Passthrough(method="session/update")]

    def _usage(self, view: _UsageUpdate) -> list[Item]:
        context = ContextWindow(used=view.used, size=view.size) if view.used is not None else None
        cost = None
        if view.cost is not None:
            if self._late_cost and self._current is not None:
                self._current.cost_at_start = view.cost.amount  # the cancelled turn's, not this one's
            self._late_cost = False
            self._cost = view.cost.amount
            self._cost_currency = view.cost.currency
            cost = Cost(amount=view.cost.amount, currency=view.cost.currency, source="agent")
        if context is None and cost is None:
            return [Passthrough(method="session/update")]
        return [Usage(context=context, cost=cost, scope="session")]

    def _compaction(self, view: _CompactionUpdate) -> list[Item]:
        status = _COMPACTION_STATUS.get(view.status)
        if status is None:
            return [Passthrough(method="session/update")]
        summary = "".join(t for t in (_block_text(b) for b in view.summary or ()) if t) or None
        error = view.error if isinstance(view.error, str) else None
        return [Compaction(compaction_id=view.compaction_id, status=status, summary=summary, error=error)]

    def _notice(self, view: _Notice) -> list[Item]:
        text = f"{view.title}: {view.description}" if view.description else view.title
        if view.severity == "error":
            return [Emit(body=Error(message=text, error_type="notice", recoverable=True), origin="live")]
        return [Emit(body=WarningBody(message=text, source="agent"), origin="live")]


def _applied(text: str, old: str | None, new: str | None, written: str) -> bool:
    """Whether ``written`` is ``text`` with a diff's ``old`` text replaced by its ``new`` (once,
    or everywhere: an edit may replace all)."""
    if not old or new is None or old not in text:
        return False
    return written in (text.replace(old, new, 1), text.replace(old, new))


def _choices(f: _SchemaField) -> list[QuestionOption]:
    """A field's choices: ``oneOf`` consts with titles, or ``enum`` values (of the items, for an array)."""
    src: _SchemaField | _SchemaChoices = f.items if f.type == "array" and f.items is not None else f
    listed = src.one_of or (src.any_of if isinstance(src, _SchemaChoices) else None)
    if listed:
        return [QuestionOption(id=str(c.const), label=c.title or str(c.const)) for c in listed]
    return [QuestionOption(id=str(v), label=str(v)) for v in src.enum or ()]


_REQUESTS: Final[dict[str, _RequestHandler]] = {
    "initialize": AcpAdapter._req_passthrough,
    "session/new": AcpAdapter._req_new,
    "session/load": AcpAdapter._req_load,
    "session/resume": AcpAdapter._req_resume,
    "session/set_mode": AcpAdapter._req_with_params,
    "session/set_model": AcpAdapter._req_with_params,
    "session/set_config_option": AcpAdapter._req_with_params,
    "session/prompt": AcpAdapter._req_prompt,
    "session/request_permission": AcpAdapter._req_permission,
    "elicitation/create": AcpAdapter._req_elicitation,
    "fs/read_text_file": AcpAdapter._req_fs_read,
    "fs/write_text_file": AcpAdapter._req_fs_write,
    "terminal/create": AcpAdapter._req_terminal_create,
    "terminal/output": AcpAdapter._req_terminal,
    "terminal/wait_for_exit": AcpAdapter._req_terminal,
    "terminal/kill": AcpAdapter._req_terminal,
    "terminal/release": AcpAdapter._req_terminal,
}

_RESPONSES: Final[dict[str, _ResponseHandler]] = {
    "initialize": AcpAdapter._res_initialize,
    "session/new": AcpAdapter._res_new,
    "session/load": AcpAdapter._res_load,
    "session/resume": AcpAdapter._res_resume,
    "session/set_mode": AcpAdapter._res_set_mode,
    "session/set_model": AcpAdapter._res_set_model,
    "session/set_config_option": AcpAdapter._res_set_config,
    "session/prompt": AcpAdapter._res_prompt,
    "session/request_permission": AcpAdapter._res_permission,
    "elicitation/create": AcpAdapter._res_elicitation,
    "fs/read_text_file": AcpAdapter._res_fs_read,
    "terminal/create": AcpAdapter._res_terminal_create,
    "terminal/output": AcpAdapter._res_terminal_output,
    "terminal/wait_for_exit": AcpAdapter._res_terminal_exit,
    "terminal/release": AcpAdapter._res_terminal_release,
}

_NOTIFICATIONS: Final[dict[str, Callable[[AcpAdapter, Raw], list[Item]]]] = {
    "session/update": AcpAdapter._update,
    "session/cancel": AcpAdapter._note_cancel,
    "$/cancel_request": AcpAdapter._cancel_request,
}

#: The head of a message of a known method: one shared Source each (frozen; the core reads it).
_SOURCES: Final = {method: Source(method=method) for method in (*_REQUESTS, *_NOTIFICATIONS)}
_UPDATE_SOURCE: Final = _SOURCES["session/update"]

_UpdateHandler = Callable[[AcpAdapter, Any], list[Item]]

#: The variants of ``session/update``: each one's decoder (alone) and handler.
_VARIANTS: Final[dict[str, tuple[msgspec.json.Decoder[Any], _UpdateHandler]]] = {
    "user_message_chunk": (_CHUNK, AcpAdapter._user_chunk),
    "agent_message_chunk": (_CHUNK, AcpAdapter._agent_chunk),
    "agent_thought_chunk": (_CHUNK, AcpAdapter._thought_chunk),
    "tool_call": (_TOOL_CALL, AcpAdapter._tool_call),
    "tool_call_update": (_TOOL_CALL, AcpAdapter._tool_call),
    "plan": (_PLAN, AcpAdapter._plan),
    "available_commands_update": (_COMMANDS, AcpAdapter._commands),
    "current_mode_update": (_MODE, AcpAdapter._current_mode),
    "config_option_update": (_CONFIG, AcpAdapter._config),
    "session_info_update": (_INFO, AcpAdapter._info),
    "usage_update": (_USAGE, AcpAdapter._usage),
    "plan_update": (_PLAN_CONTENT, AcpAdapter._plan_update),
    "compaction_update": (_COMPACTION, AcpAdapter._compaction),
    "notice": (_NOTICE, AcpAdapter._notice),
}

#: The same, by the class of the one-pass view (``_Update``): the variant's name and handler.
_UPDATES: Final[dict[type, tuple[str, _UpdateHandler]]] = {
    cls: (tag, _VARIANTS[tag][1]) for cls in get_args(_AnyUpdate) if isinstance(tag := cls.__struct_config__.tag, str)
}
assert len(_UPDATES) == len(_VARIANTS)  # every variant has its tagged view

#: The variants that are no output of a turn's model: a cancelled turn's late cost may follow them.
_NO_OUTPUT: Final = frozenset(
    ("usage_update", "available_commands_update", "current_mode_update", "config_option_update", "session_info_update")
)


def _from(subagent: str | None, items: list[Item]) -> list[Item]:
    """Items said by a sub-agent (``subagentId``); items of the main thread unchanged."""
    if subagent is None:
        return items
    return [
        Emit(body=i, subagent_id=subagent)
        if isinstance(i, Body)
        else msgspec.structs.replace(i, subagent_id=subagent)
        if isinstance(i, Emit | Problem) and i.subagent_id is None
        else i
        for i in items
    ]


def _synthetic(items: list[Item]) -> list[Item]:
    """Items the library makes up (a message cut off by the end of the input): ``protocol: "core"``."""
    return [
        Emit(body=i, synthetic=True)
        if isinstance(i, Body)
        else msgspec.structs.replace(i, synthetic=True)
        if isinstance(i, Emit)
        else i
        for i in items
    ]


def _agent_input(raw: Raw | None) -> _AgentInput:
    if raw is None or not _given(raw):
        return _AgentInput()
    try:
        return _AGENT_INPUT.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return _AgentInput()


def _prompt_of(raw: Raw | None) -> bool:
    """Whether an Agent/Task call's input already holds its prompt (Claude streams it in)."""
    return _agent_input(raw).prompt is not None
