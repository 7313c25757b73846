"""The `claude-transcript` adapter: Claude Code's stored session files.

``~/.claude/projects/<encoded cwd>/<session>.jsonl`` plus, read after it as
companions, ``<session>/subagents/agent-<id>.jsonl``.  Events are re-derived
from stored history, so they are ``origin: "replay"``.

Facts (seen in Claude Code 2.1.332 files unless said otherwise):

* One JSON object per line, camelCase envelope (``sessionId``, ``parentUuid``,
  ``isSidechain``, ``toolUseResult``, ``requestId``), while ``message`` is the
  Anthropic API shape (snake_case ``stop_reason``, ``tool_use_id``).
* ``user`` / ``assistant`` / ``system`` / ``attachment`` lines carry ``uuid``
  and ``parentUuid`` (a linked list; ``null`` at a file's root and on
  ``compact_boundary``).  Bookkeeping lines do not: ``queue-operation``,
  ``atis-latch``, ``api-request-shape``, ``api-request-blob``,
  ``api-request``, ``last-prompt``, ``tools-used``, ``cost-state``, ``mode``
  (2.1.332); ``summary``, ``custom-title``, ``ai-title``, ``permission-mode``,
  ``file-history-snapshot`` in other builds.
* One ``assistant`` line per content block; the blocks of one API message share
  ``message.id`` and repeat the same ``usage``.  Unlike stream-json (where
  every line says ``stop_reason: null`` and ``output_tokens: 1``), the stored
  lines carry the message's final ``stop_reason`` and final ``usage``.
* There is no turn id and, in 2.1.332, no ``system/turn_duration`` line: a turn
  starts at a real prompt (a ``user`` line with string or text content, not a
  tool result, not ``isMeta``) and ends when the last message whose
  ``stop_reason`` is not ``tool_use`` is over, or at a tool result with
  ``toolEndsTurn: true`` (``--json-schema``).  An interrupt writes a ``user``
  text line ``[Request interrupted by user]`` after an assistant line with
  ``isAbortedMidStream: true`` and ``stop_reason: null``.
* ``cost-state`` is written when the CLI process ends (twice in a resumed
  session's file, once per run): it closes a turn left open, e.g. one stopped
  by ``--max-turns`` right after a tool result.
* The prompt's ``uuid`` equals the ``uuid`` stream-json gives the same message
  with ``--replay-user-messages``; assistant lines keep the same ``uuid`` in
  both formats.
* Tool results: a ``user`` line with one ``tool_result`` block, and
  ``toolUseResult`` beside ``message``: the tool's structured output (Bash
  ``{stdout, stderr, interrupted}``, Write ``{type, filePath, content,
  structuredPatch}``, Agent ``{status, agentId, prompt, content, ...}``) or, on
  an error or refusal, the string ``"Error: ..."``.  Sub-agent tool results
  have no ``toolUseResult``.
* Sub-agents: a separate file per agent; every line has ``isSidechain: true``
  and ``agentId``; ``sessionId`` is the parent's.  The link to the spawning
  ``Agent`` call is only in ``agent-<id>.meta.json`` (``toolUseId``, not a
  ``.jsonl`` file, so never fed) and in the parent's tool result
  (``toolUseResult.agentId``), which is read first.
* A background agent's end comes back as a ``user`` prompt with
  ``origin.kind: "task-notification"`` whose text is a ``<task-notification>``
  block; it starts a turn of its own.
* API errors: retries are ``system/api_error`` lines; the final failure is an
  ``assistant`` line with ``isApiErrorMessage: true``, ``model: "<synthetic>"``
  and the error text as its content.

Branches (rewind, fork): the adapter is fed line by line and each event must
carry the line it came from, so it translates eagerly, in file order.  A line
(``user``/``assistant``) whose ``parentUuid`` already has such a child starts a
new branch: the adapter reports it with a synthesized ``warning`` naming the
fork point; what was already emitted for the abandoned branch stays (the core
gives no way to attach a buffered line's own payload to a later event, so
holding lines back until the branch is known would lose their ``native``).
State kept for this: one uuid per message line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import msgspec
from msgspec import Raw, Struct

from normalize import (
    Adapter,
    AssistantMessage,
    Body,
    Category,
    CommandOutput,
    Compaction,
    ContextUpdated,
    Cost,
    Direction,
    Emit,
    Error,
    FileDiff,
    Item,
    Location,
    MalformedMessage,
    ModeUpdate,
    Passthrough,
    Reasoning,
    Sample,
    SessionCreated,
    SessionInfo,
    SessionRecord,
    Source,
    Subagent,
    Tokens,
    ToolCall,
    ToolChangeApplied,
    TurnComplete,
    TurnStart,
    Usage,
    UserMessage,
)
from normalize import Warning as WarningBody

__all__ = ["ClaudeTranscriptAdapter"]


# --------------------------------------------------------------------------
# Views: only the fields the adapter reads

#: a ``Raw`` field's value when the key is absent (msgspec has no ``Raw | None``)
_ABSENT = Raw()


def _opt(raw: Raw) -> Raw | None:
    """``None`` for an absent or ``null`` value, else the value untouched."""
    return raw if len(raw) and bytes(raw) != b"null" else None


class _Block(Struct, frozen=True):
    type: str = ""
    text: str | None = None
    thinking: str | None = None
    data: str | None = None
    id: str | None = None
    name: str | None = None
    input: Raw = _ABSENT
    tool_use_id: str | None = None
    content: Raw = _ABSENT
    is_error: bool | None = None


class _Message(Struct, frozen=True):
    id: str | None = None
    model: str | None = None
    content: str | list[_Block] | None = None
    stop_reason: str | None = None
    usage: Raw = _ABSENT


class _Origin(Struct, frozen=True):
    kind: str | None = None


class _Line(Struct, frozen=True):
    type: str = ""
    subtype: str | None = None
    uuid: str | None = None
    parentUuid: str | None = None
    isSidechain: bool = False
    agentId: str | None = None
    sessionId: str | None = None
    timestamp: str | None = None
    cwd: str | None = None
    version: str | None = None
    permissionMode: str | None = None
    message: _Message | None = None
    toolUseResult: Raw = _ABSENT
    toolEndsTurn: bool = False
    isMeta: bool = False
    isCompactSummary: bool = False
    isApiErrorMessage: bool = False
    apiErrorType: str | None = None
    error: Raw = _ABSENT
    origin: _Origin | None = None
    attachment: Raw = _ABSENT
    content: Raw = _ABSENT
    level: str | None = None
    retryAttempt: int | None = None
    maxRetries: int | None = None
    # bookkeeping lines
    summary: str | None = None
    customTitle: str | None = None
    aiTitle: str | None = None
    mode: str | None = None
    totalCostUSD: float | None = None
    modelUsage: dict[str, _ModelUsage] | None = None


class _ModelUsage(Struct, frozen=True):
    inputTokens: int = 0
    outputTokens: int = 0
    cacheReadInputTokens: int = 0
    cacheCreationInputTokens: int = 0
    thinkingTokens: int | None = None


class _OutputDetails(Struct, frozen=True):
    thinking_tokens: int | None = None


class _Usage(Struct, frozen=True):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    output_tokens_details: _OutputDetails | None = None


class _Hunk(Struct, frozen=True):
    oldStart: int
    oldLines: int
    newStart: int
    newLines: int
    lines: list[str]


class _ToolResult(Struct, frozen=True):
    """``toolUseResult`` when it is an object (the fields of every tool, all optional)."""

    type: str | None = None
    stdout: str | None = None
    stderr: str | None = None
    filePath: str | None = None
    content: Any = None
    structuredPatch: list[_Hunk] | None = None
    originalFile: str | None = None
    status: str | None = None
    agentId: str | None = None
    agentType: str | None = None
    prompt: str | None = None
    description: str | None = None
    totalTokens: int | None = None
    totalToolUseCount: int | None = None
    totalDurationMs: int | None = None


class _ApiError(Struct, frozen=True):
    formatted: str | None = None
    message: str | None = None


class _Attachment(Struct, frozen=True):
    type: str = ""
    addedNames: list[str] | None = None
    removedNames: list[str] | None = None


class _AgentInput(Struct, frozen=True):
    description: str | None = None
    prompt: str | None = None
    subagent_type: str | None = None
    run_in_background: bool | None = None
    model: str | None = None


class _PathInput(Struct, frozen=True):
    file_path: str | None = None
    notebook_path: str | None = None
    path: str | None = None
    description: str | None = None


class _TextBlock(Struct, frozen=True):
    type: str = ""
    text: str | None = None


class _Sniff(Struct, frozen=True):
    type: Any = None
    sessionId: Any = None
    session_id: Any = None
    uuid: Any = None
    parentUuid: Any = "absent"


_LINE = msgspec.json.Decoder(_Line)
_USAGE = msgspec.json.Decoder(_Usage)
_TOOL_RESULT = msgspec.json.Decoder(str | list[Any] | _ToolResult)
_API_ERROR = msgspec.json.Decoder(_ApiError)
_ATTACHMENT = msgspec.json.Decoder(_Attachment)
_AGENT_INPUT = msgspec.json.Decoder(_AgentInput)
_PATH_INPUT = msgspec.json.Decoder(_PathInput)
_RESULT_CONTENT = msgspec.json.Decoder(str | list[_TextBlock])
_SNIFF = msgspec.json.Decoder(_Sniff)


# --------------------------------------------------------------------------
# Tables

_CATEGORIES: dict[str, Category] = {
    "Read": "read",
    "NotebookRead": "read",
    "LS": "read",
    "Edit": "edit",
    "MultiEdit": "edit",
    "Write": "edit",
    "NotebookEdit": "edit",
    "Glob": "search",
    "Grep": "search",
    "ToolSearch": "search",
    "Bash": "execute",
    "BashOutput": "execute",
    "KillBash": "execute",
    "KillShell": "execute",
    "WebFetch": "fetch",
    "WebSearch": "web-search",
    "TodoWrite": "think",
    "Agent": "other",
    "Task": "other",
}
_MESSAGE_TYPES = frozenset({"user", "assistant"})
_AGENT_TOOLS = frozenset({"Agent", "Task"})
_EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write"})
_INTERRUPTS = frozenset({"[Request interrupted by user]", "[Request interrupted by user for tool use]"})
#: stop reasons after which the model spoke its last word in the turn
_CONTINUES = frozenset({"tool_use", "pause_turn"})
_EXIT_CODE = re.compile(r"^(?:Error: )?Exit code (\d+)\n?")
_TAG = re.compile(r"<(task-id|tool-use-id|status|summary|result)>(.*?)</\1>", re.S)
_SUBAGENT_PHASES = {"completed": "completed", "failed": "failed", "killed": "cancelled", "stopped": "cancelled"}


def _category(tool: str) -> Category:
    if tool.startswith("mcp__"):
        return "mcp"
    return _CATEGORIES.get(tool, "other")


def _text_of(content: Raw) -> str | None:
    """The text of a tool_result's ``content`` (a string or text blocks)."""
    if _opt(content) is None:
        return None
    try:
        value = _RESULT_CONTENT.decode(content)
    except msgspec.ValidationError:
        return None
    if isinstance(value, str):
        return value
    return "".join(b.text or "" for b in value if b.type == "text")


def _unified(hunks: Sequence[_Hunk]) -> str:
    out: list[str] = []
    for h in hunks:
        out.append(f"@@ -{h.oldStart},{h.oldLines} +{h.newStart},{h.newLines} @@\n")
        out.extend(line + "\n" for line in h.lines)
    return "".join(out)


def _created(content: str) -> str:
    lines = content.splitlines()
    return f"@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{line}\n" for line in lines)


class _Call(Struct):
    tool: str
    category: Category
    subagent: str | None
    input: Raw | None


# --------------------------------------------------------------------------
# The adapter


class ClaudeTranscriptAdapter(Adapter):
    protocol = "claude-transcript"
    agent = "claude-code"
    stored = True
    companions = ("{stem}/subagents/agent-*.jsonl",)

    _TYPES: ClassVar[dict[str, Callable[[ClaudeTranscriptAdapter, _Line, list[Item]], None]]]

    def __init__(self) -> None:
        super().__init__()
        self._created = False
        self._cwd_known = False
        self._mode: str | None = None
        self._in_turn = False
        #: the stop_reason of the main thread's last message, once it ended the turn
        self._ending: str | None = None
        self._ending_msg: str | None = None
        self._calls: dict[str, _Call] = {}
        #: last message id whose usage was reported, per thread (blocks are consecutive)
        self._usage_msg: dict[str | None, str] = {}
        #: uuids that already have a conversation line (user/assistant) as a child
        self._parents: set[str] = set()

    # ------------------------------------------------------------ detection

    @classmethod
    def detect(cls, sample: Sequence[Sample]) -> float:
        """Transcript lines have a top-level camelCase ``sessionId``; message lines a ``parentUuid``."""
        chained = flat = 0
        for data, _ in sample:
            try:
                v = _SNIFF.decode(data)
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
            if not isinstance(v.type, str) or not isinstance(v.sessionId, str) or v.session_id is not None:
                continue
            if isinstance(v.uuid, str) and v.parentUuid != "absent":
                chained += 1
            else:
                flat += 1
        if chained:
            return 0.95
        return 0.5 if flat else 0.0

    # ------------------------------------------------------------- feeding

    def feed(self, message: bytes, from_: Direction = "agent") -> list[Item]:
        self._check_open()
        try:
            line = _LINE.decode(message)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise MalformedMessage(
                f"not a Claude transcript line: {exc}", kept=message[:4096].decode("utf-8", "replace")
            ) from None
        items: list[Item] = []
        if not self._created:
            self._created = True
            items.append(
                SessionCreated(
                    session_id="",
                    record=SessionRecord(
                        id="",
                        agent="",
                        protocol="",
                        native_session_id=line.sessionId,
                        cwd=line.cwd,
                        created_at=line.timestamp,
                        agent_version=line.version,
                    ),
                )
            )
            self._cwd_known = line.cwd is not None
        method = line.type if line.subtype is None else f"{line.type}/{line.subtype}"
        if line.type == "attachment" and _opt(line.attachment) is not None:
            method = f"attachment/{self._attachment(line).type}"
        items.append(Source(method=method, ts=line.timestamp))
        if self._ending is not None and not self._continues_message(line):
            self._end_turn(items, synthetic=True)
        self._follow_chain(line, items)
        if line.cwd is not None and not self._cwd_known:
            self._cwd_known = True
            items.append(SessionInfo(cwd=line.cwd))
        handler = self._TYPES.get(line.type)
        if handler is None:
            items.append(Passthrough(method=method))
        else:
            handler(self, line, items)
        return items

    def close(self) -> list[Item]:
        self._closed = True
        items: list[Item] = []
        if self._ending is not None:
            self._end_turn(items, synthetic=True)
        for call_id, call in self._calls.items():
            items.append(
                Emit(
                    body=WarningBody(
                        message=f"tool call {call_id} ({call.tool}) never got a result", source="normalize"
                    ),
                    subagent_id=call.subagent,
                    synthetic=True,
                )
            )
        self._calls.clear()
        return items

    # ------------------------------------------------------------- helpers

    def _continues_message(self, line: _Line) -> bool:
        return (
            line.type == "assistant"
            and not line.isSidechain
            and line.message is not None
            and line.message.id == self._ending_msg
        )

    def _end_turn(self, items: list[Item], *, synthetic: bool, reason: str = "ok") -> None:
        body = TurnComplete(reason="interrupt" if reason == "interrupt" else "ok", stop_reason=self._ending)
        items.append(Emit(body=body, synthetic=True) if synthetic else body)
        self._in_turn = False
        self._ending = self._ending_msg = None

    def _follow_chain(self, line: _Line, items: list[Item]) -> None:
        """Warn when a message starts a second branch below a message that already had one.

        Only conversation lines count: an attachment beside the tool result
        (``structured_output`` in 2.1.332) also points to the assistant line,
        without being a rewind.
        """
        parent = line.parentUuid
        if line.uuid is None or parent is None or line.type not in _MESSAGE_TYPES:
            return
        if parent in self._parents:
            thread = line.agentId if line.isSidechain else None
            warning = WarningBody(
                message=f"the conversation branches at {parent}: the messages first written after it are abandoned",
                source="normalize",
            )
            items.append(Emit(body=warning, subagent_id=thread, synthetic=True))
        self._parents.add(parent)

    @staticmethod
    def _attachment(line: _Line) -> _Attachment:
        assert _opt(line.attachment) is not None
        try:
            return _ATTACHMENT.decode(line.attachment)
        except msgspec.ValidationError:
            return _Attachment()

    def _put(self, items: list[Item], body: Body, line: _Line) -> None:
        if line.isSidechain:
            items.append(Emit(body=body, subagent_id=line.agentId or "unknown"))
        else:
            items.append(body)

    # --------------------------------------------------------------- user

    def _user(self, line: _Line, items: list[Item]) -> None:
        msg = line.message
        if msg is None or msg.content is None:
            items.append(Passthrough(method="user"))
            return
        if isinstance(msg.content, str):
            self._prompt(line, msg.content, items)
            return
        results = [b for b in msg.content if b.type == "tool_result"]
        if results:
            for block in results:
                self._tool_result(line, block, items)
            if line.toolEndsTurn and not line.isSidechain:
                self._ending = "tool_use"
                self._ending_msg = None
            return
        text = "".join(b.text or "" for b in msg.content if b.type == "text")
        self._prompt(line, text, items)

    def _prompt(self, line: _Line, text: str, items: list[Item]) -> None:
        if line.isMeta or text.startswith(("<local-command-", "<command-name>", "<local-command-caveat>")):
            items.append(Passthrough(method="user/meta"))
            return
        if line.isCompactSummary:
            self._put(items, Compaction(compaction_id=line.uuid or "", status="completed", summary=text), line)
            return
        if line.isSidechain:
            items.append(
                Emit(body=UserMessage(message_id=line.uuid or "", text=text), subagent_id=line.agentId or "unknown")
            )
            return
        if text in _INTERRUPTS:
            if self._in_turn:
                self._end_turn(items, synthetic=False, reason="interrupt")
            else:
                items.append(Passthrough(method="user/interrupt"))
            return
        if line.permissionMode is not None and line.permissionMode != self._mode:
            self._mode = line.permissionMode
            items.append(ModeUpdate(mode_id=line.permissionMode))
        items.append(TurnStart())
        self._in_turn = True
        if line.origin is not None and line.origin.kind == "task-notification":
            tags = dict(_TAG.findall(text))
            if "task-id" in tags:
                phase = _SUBAGENT_PHASES.get(tags.get("status", ""), "completed")
                items.append(
                    Subagent(
                        subagent_id=tags["task-id"],
                        phase=phase,  # type: ignore[arg-type]
                        call_id=tags.get("tool-use-id"),
                        description=tags.get("summary"),
                        result=tags.get("result"),
                    )
                )
                return
        items.append(UserMessage(message_id=line.uuid or "", text=text))

    def _tool_result(self, line: _Line, block: _Block, items: list[Item]) -> None:
        call_id = block.tool_use_id or ""
        call = self._calls.pop(call_id, None)
        tool = call.tool if call is not None else "unknown"
        category = call.category if call is not None else None
        structured: str | list[Any] | _ToolResult | None = None
        if _opt(line.toolUseResult) is not None:
            try:
                structured = _TOOL_RESULT.decode(line.toolUseResult)
            except msgspec.ValidationError:
                structured = None
        failed = bool(block.is_error)
        text = _text_of(block.content)
        exit_code: int | None = None
        if tool == "Bash" and failed and text is not None and (m := _EXIT_CODE.match(text)):
            exit_code = int(m.group(1))
        if isinstance(structured, _ToolResult):
            if tool == "Bash" or structured.stdout is not None:
                if structured.stdout:
                    self._put(items, CommandOutput(call_id=call_id, stream="stdout", delta=structured.stdout), line)
                if structured.stderr:
                    self._put(items, CommandOutput(call_id=call_id, stream="stderr", delta=structured.stderr), line)
            if tool in _EDIT_TOOLS and structured.filePath is not None:
                self._file_diff(line, call_id, structured, items)
            if tool in _AGENT_TOOLS and structured.agentId is not None:
                self._subagent_result(line, call_id, call, structured, items)
        elif tool == "Bash" and exit_code is not None and text is not None:
            rest = text[_EXIT_CODE.match(text).end() :]  # type: ignore[union-attr]
            if rest:
                self._put(items, CommandOutput(call_id=call_id, stream="merged", delta=rest), line)
        self._put(
            items,
            ToolCall(
                call_id=call_id,
                tool=tool,
                phase="failed" if failed else "completed",
                category=category,
                output=_opt(block.content),
                exit_code=exit_code,
            ),
            line,
        )

    def _file_diff(self, line: _Line, call_id: str, r: _ToolResult, items: list[Item]) -> None:
        assert r.filePath is not None
        if r.type == "create" and not r.structuredPatch and isinstance(r.content, str):
            diff, kind = _created(r.content), "add"
        elif r.structuredPatch:
            diff, kind = _unified(r.structuredPatch), "modify"
        else:
            return
        self._put(items, FileDiff(call_id=call_id, path=r.filePath, diff=diff, change_kind=kind), line)

    def _subagent_result(
        self, line: _Line, call_id: str, call: _Call | None, r: _ToolResult, items: list[Item]
    ) -> None:
        assert r.agentId is not None
        spec = _AgentInput()
        if call is not None and call.input is not None:
            try:
                spec = _AGENT_INPUT.decode(call.input)
            except msgspec.ValidationError:
                spec = _AgentInput()
        background = r.status == "async_launched"
        self._put(
            items,
            Subagent(
                subagent_id=r.agentId,
                phase="started",
                call_id=call_id,
                name=r.agentType or spec.subagent_type,
                description=r.description or spec.description,
                prompt=r.prompt or spec.prompt,
                background=background,
            ),
            line,
        )
        if background:
            return
        result = r.content
        if isinstance(result, list):
            result = "".join(b.get("text", "") for b in result if isinstance(b, dict) and b.get("type") == "text")
        stats = {
            k: v
            for k, v in (
                ("totalTokens", r.totalTokens),
                ("totalToolUseCount", r.totalToolUseCount),
                ("totalDurationMs", r.totalDurationMs),
            )
            if v is not None
        }
        phase = _SUBAGENT_PHASES.get(r.status or "", "completed")
        self._put(
            items,
            Subagent(
                subagent_id=r.agentId,
                phase=phase,  # type: ignore[arg-type]
                call_id=call_id,
                result=result,
                stats=stats or None,
            ),
            line,
        )

    # ---------------------------------------------------------- assistant

    def _assistant(self, line: _Line, items: list[Item]) -> None:
        msg = line.message
        if msg is None or not isinstance(msg.content, list):
            items.append(Passthrough(method="assistant"))
            return
        msg_id = msg.id or line.uuid or ""
        thread = line.agentId if line.isSidechain else None
        if _opt(msg.usage) is not None and msg.model != "<synthetic>" and self._usage_msg.get(thread) != msg_id:
            self._usage_msg[thread] = msg_id
            self._usage(line, msg.usage, items)
        for block in msg.content:
            self._block(line, msg_id, block, items)
        if not line.isSidechain and msg.stop_reason is not None and msg.stop_reason not in _CONTINUES:
            self._ending = msg.stop_reason
            self._ending_msg = msg.id

    def _block(self, line: _Line, msg_id: str, block: _Block, items: list[Item]) -> None:
        if block.type == "text":
            if line.isApiErrorMessage:
                err = Error(message=block.text or "", error_type=line.apiErrorType or "api_error", recoverable=False)
                self._put(items, err, line)
            else:
                self._put(items, AssistantMessage(message_id=msg_id, text=block.text or ""), line)
        elif block.type == "thinking":
            self._put(items, Reasoning(reasoning_id=msg_id, text=block.thinking, redacted=False), line)
        elif block.type == "redacted_thinking":
            self._put(items, Reasoning(reasoning_id=msg_id, redacted=True), line)
        elif block.type in ("tool_use", "server_tool_use") and block.id is not None:
            tool = block.name or "unknown"
            category = _category(tool)
            self._calls[block.id] = _Call(tool, category, line.agentId if line.isSidechain else None, _opt(block.input))
            title, locations = self._describe(_opt(block.input))
            self._put(
                items,
                ToolCall(
                    call_id=block.id,
                    tool=tool,
                    phase="started",
                    category=category,
                    title=title,
                    locations=locations,
                    input=_opt(block.input),
                ),
                line,
            )
        elif block.type.endswith("_tool_result") and block.tool_use_id is not None:
            call = self._calls.pop(block.tool_use_id, None)
            self._put(
                items,
                ToolCall(
                    call_id=block.tool_use_id,
                    tool=call.tool if call is not None else "unknown",
                    phase="completed",
                    category=call.category if call is not None else None,
                    output=_opt(block.content),
                ),
                line,
            )
        else:
            items.append(Passthrough(method=f"assistant/{block.type}"))

    @staticmethod
    def _describe(raw: Raw | None) -> tuple[str | None, list[Location] | None]:
        if raw is None:
            return None, None
        try:
            v = _PATH_INPUT.decode(raw)
        except msgspec.ValidationError:
            return None, None
        path = v.file_path or v.notebook_path
        return v.description, [Location(path=path)] if path else None

    def _usage(self, line: _Line, raw: Raw, items: list[Item]) -> None:
        try:
            u = _USAGE.decode(raw)
        except msgspec.ValidationError:
            return
        total = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens + u.output_tokens
        tokens = Tokens(
            input=u.input_tokens,
            output=u.output_tokens,
            total=total,
            cache_read=u.cache_read_input_tokens,
            cache_write=u.cache_creation_input_tokens,
            reasoning=u.output_tokens_details.thinking_tokens if u.output_tokens_details is not None else None,
        )
        self._put(items, Usage(tokens=tokens, scope="call"), line)

    # ------------------------------------------------------ other lines

    def _system(self, line: _Line, items: list[Item]) -> None:
        sub = line.subtype or ""
        if sub == "api_error":
            self._put(items, WarningBody(message=self._api_error_text(line), source="api"), line)
        elif sub == "compact_boundary":
            self._put(items, Compaction(compaction_id=line.uuid or "", status="completed"), line)
        elif sub == "turn_duration" and not line.isSidechain and self._in_turn:
            self._ending = self._ending or "end_turn"
            self._end_turn(items, synthetic=False)
        else:
            items.append(Passthrough(method=f"system/{sub}" if sub else "system"))

    @staticmethod
    def _api_error_text(line: _Line) -> str:
        err = _ApiError()
        if _opt(line.error) is not None:
            try:
                err = _API_ERROR.decode(line.error)
            except msgspec.ValidationError:
                err = _ApiError()
        text = f"API error: {err.formatted or err.message or 'unknown'}"
        if line.retryAttempt is not None:
            text += f" (retry {line.retryAttempt} of {line.maxRetries})"
        return text

    def _attachment_line(self, line: _Line, items: list[Item]) -> None:
        att = self._attachment(line) if _opt(line.attachment) is not None else _Attachment()
        if att.type == "deferred_tools_delta" and (att.addedNames or att.removedNames):
            change = ToolChangeApplied(added=att.addedNames or None, removed=att.removedNames or None)
            items.append(ContextUpdated(session_id="", applied=[change]))
        items.append(Passthrough(method=f"attachment/{att.type}" if att.type else "attachment"))

    def _cost_state(self, line: _Line, items: list[Item]) -> None:
        if self._in_turn and self._ending is None:
            # the process ended with the turn open (a tool result was the last word)
            self._ending = "tool_use"
        if self._ending is not None:
            self._end_turn(items, synthetic=True)
        tokens: Tokens | None = None
        if line.modelUsage:
            mu = list(line.modelUsage.values())
            inp = sum(m.inputTokens for m in mu)
            out = sum(m.outputTokens for m in mu)
            cr = sum(m.cacheReadInputTokens for m in mu)
            cw = sum(m.cacheCreationInputTokens for m in mu)
            tokens = Tokens(input=inp, output=out, total=inp + out + cr + cw, cache_read=cr, cache_write=cw)
        cost = Cost(amount=line.totalCostUSD, currency="USD", source="agent") if line.totalCostUSD is not None else None
        items.append(Usage(tokens=tokens, cost=cost, scope="session"))

    def _title(self, line: _Line, items: list[Item]) -> None:
        title = line.customTitle or line.aiTitle or line.summary
        if title is not None:
            items.append(SessionInfo(title=title))
        else:
            items.append(Passthrough(method=line.type))


ClaudeTranscriptAdapter._TYPES = {
    "user": ClaudeTranscriptAdapter._user,
    "assistant": ClaudeTranscriptAdapter._assistant,
    "system": ClaudeTranscriptAdapter._system,
    "attachment": ClaudeTranscriptAdapter._attachment_line,
    "cost-state": ClaudeTranscriptAdapter._cost_state,
    "summary": ClaudeTranscriptAdapter._title,
    "custom-title": ClaudeTranscriptAdapter._title,
    "ai-title": ClaudeTranscriptAdapter._title,
}
