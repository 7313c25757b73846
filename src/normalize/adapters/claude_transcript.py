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
* The first lines of a file (``queue-operation`` in 2.1.332) carry ``sessionId``
  and ``timestamp`` but no ``version`` or ``cwd``; every conversation line
  (``user``, ``assistant``, ``system``, ``attachment``) carries both.
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
  have no ``toolUseResult``.  The line also carries ``permissionDecision
  {decision, source, reasonType}``: stream-json's ``tool_result_meta``
  ``permission_decision`` in camelCase (``source: "config"``: no one was asked).
* Sub-agents: a separate file per agent; every line has ``isSidechain: true``
  and ``agentId``; ``sessionId`` is the parent's.  The link to the spawning
  ``Agent`` call is only in ``agent-<id>.meta.json`` (``toolUseId``, not a
  ``.jsonl`` file, so never fed) and in the parent's tool result
  (``toolUseResult.agentId`` beside its ``tool_use_id``).  The files are read
  merged in time order (``interleave``), so a sub-agent's lines come inside the
  parent's turn, before that tool result: its first line (``parentUuid: null``)
  is the prompt of the open ``Agent`` call that spawned it, and the adapter
  names the sub-agent by that call id, as stream-json does.  2.0.x also keeps
  "Warmup" sidechains (no call spawned them) started before the first prompt:
  they keep their ``agentId``.
* ``apiBlockIndex`` on each assistant line is the block's index in its API
  message (the ``index`` of stream-json's ``content_block_*`` events).
* A background agent's end comes back as a ``user`` prompt with
  ``origin.kind: "task-notification"`` whose text is a ``<task-notification>``
  block; it starts a turn of its own.
* API errors: retries are ``system/api_error`` lines; the final failure is an
  ``assistant`` line with ``isApiErrorMessage: true``, ``model: "<synthetic>"``
  and the error text as its content; its ``error`` is the CLI's category of the
  failure (``server_error``, ``unknown``, as on stdout), ``apiErrorType`` (2.1.332)
  the API's (``overloaded_error``).

Older versions (1.0.x-2.0.x; real files in captures/claude-code-1.0.*, 2.0.* and
external-*) write ``stop_reason: null`` on every assistant line and no turn end at all,
keep a sub-agent's lines inline in the main file (1.0.x: ``isSidechain: true`` with no
``agentId``, the first one the ``Task`` prompt) or in ``agent-<id>.jsonl`` beside the
session (2.0.x, same ``sessionId``), and may start with ``summary`` lines (titles of
earlier conversations, without ``sessionId``).  The turn ends such files never wrote are
inferred by the rules of "Turn inference" below; inline sub-agents are keyed by their
``Task`` call (see ``_inline_thread``).

Branches (rewind, fork): the adapter is fed line by line and each event must
carry the line it came from, so it translates eagerly, in file order.  A line
(``user``/``assistant``) whose ``parentUuid`` already has such a child starts a
new branch: the adapter reports it with a synthesized ``warning`` naming the
fork point; what was already emitted for the abandoned branch stays (the core
gives no way to attach a buffered line's own payload to a later event, so
holding lines back until the branch is known would lose their ``native``).
State kept for this: one uuid per message line.

Parallel tool calls are not branches (2.1.332, ``40-parallel-tools``): one API
message with two ``tool_use`` blocks is two ``assistant`` lines (A2's parent is
A1), and each block's ``tool_result`` line points to the line of its own block
(R1's parent is A1, beside A2).  A tool result answering a call still open, and
an ``assistant`` line continuing its parent's API message, are the expected
children of a line, never the start of a branch.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar, Final, Literal

import msgspec
from msgspec import Raw, structs

from normalize import (
    AssistantMessage,
    Body,
    Compaction,
    ContextUpdated,
    ConversationReset,
    Cost,
    Direction,
    Emit,
    Error,
    Item,
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
from normalize._session import HOLD_LIMIT
from normalize.adapters._claude_common import (
    ContentBlock,
    ToolResultView,
    block_message_id,
    block_reasoning_id,
    call_finished,
    call_started,
    decode_input,
    decode_tool_result,
    is_subagent_tool,
    permission_auto,
    present,
    tokens_of,
)

from ._base import BuiltinAdapter, on_thread, version_tuple
from ._claude_transcript_views import (
    _API_ERROR,
    _ATTACHMENT,
    _ERROR_KIND,
    _LINE,
    _RAW_ATTACHMENT_LINE,
    _SNIFF,
    _TIME,
    _USAGE,
    _ApiError,
    _AttachedLine,
    _Attachment,
    _Line,
    _Message,
    _Prompt,
    _RawAttachmentLine,
)
from ._limits import OPEN_ITEMS, SEEN_IDS, Bounded, Recent, put

__all__ = ["ClaudeTranscriptAdapter"]


# --------------------------------------------------------------------------
# Tables

_MESSAGE_TYPES: Final = frozenset({"user", "assistant"})
#: how much of a sub-agent file's first line is read to find the session it belongs to
_OWNER_LINE: Final = 1 << 20
#: The session is announced at the first conversation line (it has a ``uuid`` and,
#: in real files, ``version`` and ``cwd``: the third line of a 2.1.332 file), or
#: after this many lines without one, well within the Session's hold limit
#: (``normalize.HOLD_LIMIT``), or at close.
_ANNOUNCE_WITHIN: Final = 8
#: Lines without a ``sessionId`` (``summary``, ``file-history-snapshot``) do not count
#: towards ``_ANNOUNCE_WITHIN``, but the session is announced before the Session's hold
#: limit is reached whatever the lines say.
_HOLD_MARGIN: Final = HOLD_LIMIT - 1
_INTERRUPTS: Final = frozenset({"[Request interrupted by user]", "[Request interrupted by user for tool use]"})
#: stop reasons after which the turn goes on (the model called a tool)
_CONTINUES: Final = frozenset({"tool_use", "pause_turn"})
#: prompt texts the CLI writes itself (slash commands, their output, caveats)
_META_PREFIXES: Final = ("<local-command-", "<command-name>", "<command-message>")
#: a slash command the user typed (the CLI writes its expansion next, as an ``isMeta`` line)
_COMMAND_PREFIXES: Final = ("<command-name>", "<command-message>")
_CLEAR: Final = "<command-name>/clear</command-name>"
#: what a local command printed: the CLI's own answer, no model reply follows
_LOCAL_OUTPUT_PREFIXES: Final = ("<local-command-stdout>", "<local-command-stderr>")
_TAG: Final = re.compile(r"<(task-id|tool-use-id|status|summary|result)>(.*?)</\1>", re.S)
_SUBAGENT_PHASES: Final[dict[str, Literal["completed", "failed", "cancelled"]]] = {
    "completed": "completed",
    "failed": "failed",
    "killed": "cancelled",
    "stopped": "cancelled",
}


# --------------------------------------------------------------------------
# The adapter


def _writes_copies(version: str | None) -> bool:
    """Whether Claude Code ``version`` may write an answer again at the next stdin prompt
    (before 1.0.98; an unknown or unreadable version may)."""
    known = version_tuple(version)
    return known is None or known < (1, 0, 98)


class ClaudeTranscriptAdapter(BuiltinAdapter):
    protocol = "claude-transcript"
    announces_session = True
    agent = "claude-code"
    stored = True
    default_paths = ("~/.claude/projects",)
    companions = ("{stem}/subagents/agent-*.jsonl",)
    #: 2.0.x: a sub-agent's file is ``agent-<id>.jsonl`` beside every session of the project
    owned = ("agent-*.jsonl",)
    #: a sub-agent's lines are read where they happened: inside the parent's turn
    interleave = True

    #: line type -> handler (``attachment`` lines are handled in ``feed``, which decodes the attachment)
    _TYPES: ClassVar[dict[str, Callable[[ClaudeTranscriptAdapter, _Line, list[Item]], None]]]

    def __init__(self) -> None:
        super().__init__()
        self._created = False
        #: what the lines read so far say about the session, until it is announced
        self._record = SessionRecord(id="", agent="", protocol="")
        self._unannounced = 0
        self._read = 0
        self._cwd_known = False
        self._mode: str | None = None
        self._in_turn = False
        #: the stop_reason of the main thread's last message, once it ended the turn
        self._ending: str | None = None
        self._ending_msg: str | None = None
        #: sub-agent ``agentId`` -> the spawning call id (from the parent's tool result)
        self._agents: Bounded[str, str] = Bounded("sub-agent", OPEN_ITEMS)
        #: per thread: the message whose usage was given and the index of its first text block
        self._usage_msg: Bounded[str | None, str] = Bounded("thread (usage)", OPEN_ITEMS)
        self._usage_given: Bounded[str | None, Tokens] = Bounded("thread (usage given)", OPEN_ITEMS)
        self._first_text: Bounded[str | None, tuple[str, int]] = Bounded("thread (text)", OPEN_ITEMS)
        #: uuids that already have a conversation line (user/assistant) as a child
        self._parents: Recent = Recent()
        #: the last assistant line: (uuid, message.id), to tell a message's next block
        self._last_block: tuple[str, str] | None = None
        #: turn inference: the main thread waits for the model (a prompt or a tool result was
        #: the last word), and the last main line was a slash command (its expansion follows)
        self._reply_due = False
        self._command = False
        self._companions_started = False
        #: the time of the session's own last line (a turn the companions close ends then)
        self._main_ts: str | None = None
        #: inline sidechains (1.0.x): a sidechain line's uuid -> the sub-agent (its Task call)
        self._sidechains: dict[str, str] = {}
        #: the assistant lines read: (message.id, hash of the content), and the uuids of the copies
        #: of earlier lines (1.0.x before 1.0.98, see ``_copy``); whether the version of the
        #: last line read (``_copy_version``) is one that writes them
        self._said: Recent = Recent()
        self._copies: Recent = Recent()
        self._copy_version: str | None = None
        self._writes_copies = True

    # ------------------------------------------------------------ detection

    @classmethod
    def detect(cls, sample: Sequence[Sample]) -> float:
        """Transcript lines have a top-level camelCase ``sessionId``; message lines a ``parentUuid``.

        A resumed 2.0.x session's file starts with ``summary`` lines (``leafUuid``, no
        ``sessionId``), up to the whole sample.
        """
        chained = flat = summaries = 0
        for data, _ in sample:
            try:
                v = _SNIFF.decode(data)
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
            if v.type == "summary" and isinstance(v.leafUuid, str) and v.session_id is None:
                summaries += 1
                continue
            if not isinstance(v.type, str) or not isinstance(v.sessionId, str) or v.session_id is not None:
                continue
            if isinstance(v.uuid, str) and v.parentUuid != "absent":
                chained += 1
            else:
                flat += 1
        if chained:
            return 0.95
        if flat:
            return 0.5
        return 0.5 if summaries == len(sample) else 0.0

    @classmethod
    def owner_of(cls, path: Path) -> str | None:
        """A 2.0.x sub-agent file belongs to the session its first line names (``sessionId``).

        Claude Code names a session's file after its id, so the owner is ``<sessionId>.jsonl``.
        """
        try:
            with path.open("rb") as f:
                first = f.readline(_OWNER_LINE)
        except OSError:
            return None
        try:
            sniff = _SNIFF.decode(first)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        return sniff.sessionId if isinstance(sniff.sessionId, str) else None

    # ------------------------------------------------------------- feeding

    def feed(self, message: bytes, from_: Direction = "agent") -> list[Item]:
        self._check_open()
        line: _AttachedLine | _RawAttachmentLine
        try:
            line = _LINE.decode(message)
        except (msgspec.DecodeError, msgspec.ValidationError):
            try:  # the error (if any) is the one of the view that skips the attachment
                line = _RAW_ATTACHMENT_LINE.decode(message)
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                kept = message[:4096].decode("utf-8", "replace")
                raise MalformedMessage(f"not a Claude transcript line: {exc}", kept=kept) from None
        items: list[Item] = []
        if not self._created:
            self._learn(line)
            if (
                line.version is not None
                or line.uuid is not None
                or self._unannounced >= _ANNOUNCE_WITHIN
                or self._read >= _HOLD_MARGIN
            ):
                items.append(self._announce())
        method = line.type if line.subtype is None else f"{line.type}/{line.subtype}"
        att = None
        if line.type == "attachment":
            # decoded once: its type names the line's method, and its handler reads it
            att = self._attachment(line)
            method = f"attachment/{att.type}"
        items.append(Source(method=method, ts=line.timestamp))
        if line.isSidechain and line.agentId is not None and not self._companions_started and self._went_back(line):
            # the first line of a sub-agent file read after the session's own (time goes back):
            # the session's file is over.  Read in time order (``interleave``), it is not.
            self._companions_started = True
            if self._ending is not None:
                self._end_turn(items, synthetic=True, ts=self._main_ts)
            self._infer_turn_end(items, ts=self._main_ts)
        elif not line.isSidechain and line.timestamp is not None:
            self._main_ts = line.timestamp
        if self._ending is not None and not line.isSidechain and not self._continues_message(line):
            # (a sub-agent's line, from a file read after the session's, is no part of the main turn)
            self._end_turn(items, synthetic=True)
        self._follow_chain(line, items)
        if line.cwd is not None and not self._cwd_known:
            self._cwd_known = True
            items.append(SessionInfo(cwd=line.cwd))
        if att is not None:
            self._attachment_line(att, items)
            return items
        handler = self._TYPES.get(line.type)
        if handler is None:
            items.append(Passthrough(method=method))
        else:
            handler(self, line, items)
        return items

    def close(self) -> list[Item]:
        self._closed = True
        items: list[Item] = [] if self._created else [self._announce()]
        if self._ending is not None:
            self._end_turn(items, synthetic=True)
        self._infer_turn_end(items)  # calls left open are settled by the core (docs/adapters.md)
        return items

    # ------------------------------------------------------------- helpers

    def _learn(self, line: _Line) -> None:
        """Keep what a line says about the session (the first value of each field wins)."""
        r = self._record
        self._read += 1
        if line.sessionId is not None:
            self._unannounced += 1
        self._record = structs.replace(
            r,
            native_session_id=r.native_session_id or line.sessionId,
            cwd=r.cwd or line.cwd,
            created_at=r.created_at or line.timestamp,
            agent_version=r.agent_version or line.version,
        )

    def _announce(self) -> SessionCreated:
        self._created = True
        self._cwd_known = self._record.cwd is not None
        return SessionCreated(session_id="", record=self._record)

    @classmethod
    def time_of(cls, message: bytes) -> str | None:
        try:
            return _TIME.decode(message).timestamp
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None

    def _thread(self, line: _Line) -> str | None:
        """The sub-agent a line belongs to (None: the main thread)."""
        if not line.isSidechain:
            return None
        if line.agentId is None:
            return self._inline_thread(line)
        thread = self._agents.get(line.agentId)
        if thread is None:
            # its file read in time order: the parent's tool result, which names the agent,
            # comes after; the first line is the prompt of the Agent call that spawned it
            claimed = self._claim_task(line) if line.parentUuid is None else "unknown"
            thread = line.agentId if claimed == "unknown" else claimed
            put(self._agents, line.agentId, thread)
        return thread

    def _went_back(self, line: _Line) -> bool:
        return line.timestamp is not None and self._main_ts is not None and line.timestamp < self._main_ts

    def _put(self, items: list[Item], body: Body, thread: str | None) -> None:
        items.append(on_thread(body, thread))

    def _continues_message(self, line: _Line) -> bool:
        return (
            line.type == "assistant"
            and not line.isSidechain
            and line.message is not None
            and line.message.id == self._ending_msg
        )

    def _end_turn(self, items: list[Item], *, synthetic: bool, interrupt: bool = False, ts: str | None = None) -> None:
        body = TurnComplete(reason="interrupt" if interrupt else "ok", stop_reason=self._ending)
        items.append(Emit(body=body, synthetic=True, ts=ts) if synthetic else body)
        self._in_turn = False
        self._ending = self._ending_msg = None
        self._reply_due = False

    def _follow_chain(self, line: _Line, items: list[Item]) -> None:
        """Warn when a message starts a second branch below a message that already had one.

        Only conversation lines count: an attachment beside the tool result
        (``structured_output`` in 2.1.332) also points to the assistant line,
        without being a rewind.
        """
        parent = line.parentUuid
        if line.uuid is None or parent is None or line.type not in _MESSAGE_TYPES:
            return
        if parent in self._parents and not self._expected_child(line, parent):
            warning = WarningBody(
                message=f"the conversation branches at {parent}: the messages first written after it are abandoned",
                source="normalize",
            )
            items.append(Emit(body=warning, subagent_id=self._thread(line), synthetic=True))
        self._parents.add(parent)
        msg = line.message
        if line.type == "assistant" and msg is not None and msg.id is not None:
            self._last_block = (line.uuid, msg.id)

    def _expected_child(self, line: _Line, parent: str) -> bool:
        """A line every message of parallel tool calls has beside its first child (see Branches)."""
        msg = line.message
        if msg is None:
            return False
        if line.type == "assistant":  # the next block of the parent's API message
            return msg.id is not None and self._last_block == (parent, msg.id)
        if not isinstance(msg.content, list):
            return False
        answers = [b.tool_use_id for b in msg.content if b.type == "tool_result"]
        return bool(answers) and all(a is not None and a in self.calls for a in answers)

    @staticmethod
    def _attachment(line: _AttachedLine | _RawAttachmentLine) -> _Attachment:
        """The attachment of the line, or an empty one when it is absent or not of the shape read."""
        att = line.attachment
        if isinstance(att, _Attachment):
            return att
        if not isinstance(att, Raw) or (raw := present(att)) is None:
            return _Attachment()
        try:
            return _ATTACHMENT.decode(raw)
        except msgspec.ValidationError:
            return _Attachment()

    # ------------------------------------------------------- turn inference
    #
    # The rules for turn ends a file did not write (1.0.x-2.0.x: ``stop_reason: null`` on
    # every line, no ``turn_duration``, no ``cost-state``), kept in one place:
    #
    # 1. A prompt of the main thread (a real prompt, a slash command, a task notification)
    #    while a turn is open ends that turn as completed (``ok``, made up) when nothing is
    #    pending on the main thread: no tool call without its result, and the model answered
    #    after the last prompt or tool result (``_reply_due``).
    # 2. The end of the file ends the last turn ``ok`` under the same condition; the
    #    session's file is over at the end of the input or at the first line of a sub-agent
    #    file (``agentId``: companions are read after the session's file).
    # 3. Otherwise the turn is left open: a new prompt makes the Session close it as
    #    ``interrupt``, the end of the file as cut off.  A file that ends on a tool call
    #    without result, a tool result the model never answered, or a prompt without an
    #    answer is really cut.
    #
    # A turn the agent ended itself (a final ``stop_reason``, ``turn_duration``, an interrupt
    # marker, ``cost-state``) is never touched by these rules.

    def _pending(self) -> bool:
        """Whether the main thread still waits for something (see Turn inference)."""
        return self._reply_due or any(call.subagent_id is None for call in self.calls)

    def _infer_turn_end(self, items: list[Item], ts: str | None = None) -> None:
        if self._in_turn and self._ending is None and not self._pending():
            items.append(Emit(body=TurnComplete(reason="ok"), synthetic=True, ts=ts))
            self._in_turn = False

    # -------------------------------------------------- inline sub-agents

    def _inline_thread(self, line: _Line) -> str:
        """The sub-agent of an inline sidechain line (1.0.x: no ``agentId``).

        A sidechain starts with a ``user`` line (``parentUuid: null``) whose text is the
        ``Task`` call's ``prompt``: that open call names the sub-agent, as the call id names
        it everywhere else.  The lines after it follow ``parentUuid``.  A start no open call
        asked for is ``unknown``.
        """
        uuid = line.uuid
        if uuid is not None and uuid in self._sidechains:
            return self._sidechains[uuid]
        parent = line.parentUuid
        thread = self._sidechains.get(parent) if parent is not None else None
        if thread is None:
            thread = self._claim_task(line)
        if uuid is not None:
            if len(self._sidechains) >= SEEN_IDS:  # the oldest lines' children are long written
                del self._sidechains[next(iter(self._sidechains))]
            self._sidechains[uuid] = thread
        return thread

    def _claim_task(self, line: _Line) -> str:
        msg = line.message
        content = msg.content if msg is not None else None
        if isinstance(content, list):
            text = "".join(b.text or "" for b in content if b.type == "text")
        else:
            text = content or ""
        for call in self.calls:
            note = call.note
            if isinstance(note, _Prompt) and note.text == text:
                note.text = None
                return call.call_id
        return "unknown"

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
        if not results:
            self._prompt(line, "".join(b.text or "" for b in msg.content if b.type == "text"), items)
            return
        for block in results:
            self._tool_result(line, block, items, single=len(results) == 1)
        if not line.isSidechain:
            self._reply_due = True  # the model answers a tool result
            self._command = False
        if line.toolEndsTurn and not line.isSidechain:
            self._ending, self._ending_msg = "tool_use", None

    def _prompt(self, line: _Line, text: str, items: list[Item]) -> None:
        thread = self._thread(line)
        after_command, self._command = self._command, False
        if thread is None and text.startswith(_LOCAL_OUTPUT_PREFIXES):
            self._reply_due = False  # the CLI answered a local command (/clear, /cost) itself
            items.append(Passthrough(method="user/meta"))
        elif thread is None and not line.isMeta and text.startswith(_COMMAND_PREFIXES):
            if _CLEAR in text:
                self._cleared(line, items)
            self._start_turn(line, text, items)  # a slash command is the user's prompt
            self._command = True
        elif thread is None and line.isMeta and after_command and self._in_turn:
            # the slash command's expansion: what the model is asked, in the command's turn
            items.append(UserMessage(message_id=line.uuid or "", text=text))
            self._reply_due = True
        elif line.isMeta or text.startswith(_META_PREFIXES):
            items.append(Passthrough(method="user/meta"))
        elif line.isCompactSummary:
            self._put(items, Compaction(compaction_id=line.uuid or "", status="completed", summary=text), thread)
        elif thread is not None:
            self._put(items, UserMessage(message_id=line.uuid or "", text=text), thread)
        elif text in _INTERRUPTS:
            if self._in_turn:
                self._end_turn(items, synthetic=False, interrupt=True)
            else:
                items.append(Passthrough(method="user/interrupt"))
        else:
            self._start_turn(line, text, items)

    def _cleared(self, line: _Line, items: list[Item]) -> None:
        """``/clear``: Claude Code writes it at the head of the new conversation's file, under
        the new session id; the conversation it cleared is named only when its lines are in
        the same file (else ``previousAgentSessionId`` is empty: the file does not say it)."""
        self._infer_turn_end(items)
        first = self._record.native_session_id
        new = line.sessionId or first or ""
        previous = first if first is not None and first != new else ""
        items.append(ConversationReset(agent_session_id=new, previous_agent_session_id=previous, trigger="clear"))

    def _start_turn(self, line: _Line, text: str, items: list[Item]) -> None:
        """A prompt of the main thread: it starts a turn (and may end the open one, see Turn inference)."""
        self._infer_turn_end(items)
        if line.permissionMode is not None and line.permissionMode != self._mode:
            self._mode = line.permissionMode
            items.append(ModeUpdate(mode_id=line.permissionMode))
        items.append(TurnStart())
        self._in_turn = True
        self._reply_due = True
        if line.origin is not None and line.origin.kind == "task-notification":
            items.append(self._task_notification(text))
        else:
            items.append(UserMessage(message_id=line.uuid or "", text=text))

    @staticmethod
    def _task_notification(text: str) -> Body:
        """A background agent's end, told as a prompt: its ``<task-notification>`` block."""
        tags = dict(_TAG.findall(text))
        call_id = tags.get("tool-use-id")
        if call_id is None:
            return UserMessage(message_id="", text=text)
        return Subagent(
            subagent_id=call_id,
            phase=_SUBAGENT_PHASES.get(tags.get("status", ""), "completed"),
            call_id=call_id,
            result=tags.get("result"),
            activity=tags.get("summary"),
        )

    def _tool_result(self, line: _Line, block: ContentBlock, items: list[Item], *, single: bool = True) -> None:
        call_id = block.tool_use_id or ""
        call = self.calls.get(call_id)
        tool = call.tool if call is not None else "unknown"
        result = decode_tool_result(present(line.toolUseResult)) if single else None
        if isinstance(result, ToolResultView) and result.agent_id is not None:
            put(self._agents, result.agent_id, call_id)
        thread = self._thread(line)
        if single:  # the line's permission decision (one tool result per line in 2.1.332)
            title = (call.title if call is not None else None) or tool
            auto = permission_auto(call_id, tool, title, line.permissionDecision)
            if auto is not None:
                self._put(items, auto, thread)
        # a refused call (``toolDenialKind``) never ran: no command output, no diff
        executed = line.toolDenialKind is None
        content = present(block.content)
        for body in call_finished(call_id, tool, content, bool(block.is_error), result, executed=executed):
            self._put(items, body, thread)

    # ---------------------------------------------------------- assistant

    def _assistant(self, line: _Line, items: list[Item]) -> None:
        msg = line.message
        if msg is None or not isinstance(msg.content, list):
            items.append(Passthrough(method="assistant"))
            return
        if self._copy(line, msg):
            items.append(Passthrough(method="assistant/copy"))
            return
        msg_id = msg.id or line.uuid or ""
        thread = self._thread(line)
        if thread is None:
            self._reply_due = self._command = False
        usage = present(msg.usage)
        if usage is not None and msg.model != "<synthetic>":
            if self._usage_msg.get(thread) != msg_id:
                put(self._usage_msg, thread, msg_id)
                self._usage(usage, thread, items)
            else:
                self._usage_more(usage, thread, items)
        index = line.apiBlockIndex or 0
        started: dict[str, str] = {}  # the calls this line starts (the core's table has them after it)
        for block in msg.content:
            self._block(line, msg_id, index, block, thread, started, items)
        if thread is None and msg.stop_reason is not None and msg.stop_reason not in _CONTINUES:
            self._ending, self._ending_msg = msg.stop_reason, msg.id

    def _copy(self, line: _Line, msg: _Message) -> bool:
        """Whether the line is a copy of an assistant line already read.

        Claude Code before 1.0.98, fed prompts on stdin (``--input-format stream-json``),
        writes the previous answer again when the next prompt comes: the same ``message.id``
        and content under a new ``uuid``, at the root of the file (``parentUuid: null``; the
        next block's copy points to the first's), without ``requestId``.  The message was
        said once: its copy is kept as ``session.update``, not said twice.
        """
        if msg.id is None:
            return False
        if line.version != self._copy_version:  # the same for every line of a file
            self._copy_version = line.version
            self._writes_copies = _writes_copies(line.version)
        if not self._writes_copies:
            return False
        said = (msg.id, hash(msgspec.json.encode(msg.content)))
        if said in self._said and (line.parentUuid is None or line.parentUuid in self._copies):
            if line.uuid is not None:
                self._copies.add(line.uuid)
            return True
        self._said.add(said)
        return False

    def _block(
        self,
        line: _Line,
        msg_id: str,
        index: int,
        block: ContentBlock,
        thread: str | None,
        started: dict[str, str],
        items: list[Item],
    ) -> None:
        if block.type == "text":
            if line.isApiErrorMessage:
                err = Error(message=block.text or "", error_type=self._api_error_type(line), recoverable=False)
                self._put(items, err, thread)
                return
            first = self._first_text.get(thread)
            if first is None or first[0] != msg_id:
                first = (msg_id, index)
                put(self._first_text, thread, first)
            body: Body = AssistantMessage(message_id=block_message_id(msg_id, index, first[1]), text=block.text or "")
            self._put(items, body, thread)
        elif block.type in ("thinking", "redacted_thinking"):
            redacted = block.type == "redacted_thinking"
            reasoning = Reasoning(
                reasoning_id=block_reasoning_id(msg_id, index),
                text=None if redacted else block.thinking,
                redacted=redacted,
            )
            self._put(items, reasoning, thread)
        elif block.type in ("tool_use", "server_tool_use") and block.id is not None:
            tool = block.name or "unknown"
            raw_input = present(block.input)
            prompt = decode_input(raw_input).prompt if is_subagent_tool(tool) else None
            for body in call_started(block.id, tool, raw_input):
                if prompt is not None and isinstance(body, ToolCall):
                    # what a sidechain's first line is matched with (``_claim_task``)
                    items.append(Emit(body=body, subagent_id=thread, note=_Prompt(prompt)))
                else:
                    self._put(items, body, thread)
            started[block.id] = tool
        elif block.type.endswith("_tool_result") and block.tool_use_id is not None:
            call = self.calls.get(block.tool_use_id)
            tool = call.tool if call is not None else started.get(block.tool_use_id, "unknown")
            for body in call_finished(block.tool_use_id, tool, present(block.content), False, None):
                self._put(items, body, thread)
        else:
            items.append(Passthrough(method=f"assistant/{block.type}"))

    def _usage(self, raw: Raw, thread: str | None, items: list[Item]) -> None:
        try:
            usage = _USAGE.decode(raw)
        except msgspec.ValidationError:
            return
        tokens = tokens_of(usage)
        put(self._usage_given, thread, tokens)
        self._put(items, Usage(tokens=tokens, scope="call"), thread)

    def _usage_more(self, raw: Raw, thread: str | None, items: list[Item]) -> None:
        """A later line of the same API message that counts more tokens than its first line.

        2.1.332 repeats the final usage on every line of a message; 1.0.x-2.0.x write each
        line with the usage known when its block ended (``output_tokens: 1`` from the stream's
        start, the final count only on some last lines).  What a later line adds is reported
        as one more ``call`` usage, so a message's usages sum to the most any line says.
        """
        given = self._usage_given.get(thread)
        if given is None:
            return
        try:
            now = tokens_of(_USAGE.decode(raw))
        except msgspec.ValidationError:
            return
        more = _more(now, given)
        if more is not None:
            put(self._usage_given, thread, now)
            self._put(items, Usage(tokens=more, scope="call"), thread)

    # ------------------------------------------------------ other lines

    def _system(self, line: _Line, items: list[Item]) -> None:
        sub = line.subtype or ""
        thread = self._thread(line)
        if sub == "api_error":
            self._put(items, WarningBody(message=self._api_error_text(line), source="api"), thread)
        elif sub == "compact_boundary":
            self._put(items, Compaction(compaction_id=line.uuid or "", status="completed"), thread)
        elif sub == "turn_duration" and thread is None and self._in_turn:
            self._ending = self._ending or "end_turn"
            self._end_turn(items, synthetic=False)
        else:
            items.append(Passthrough(method=f"system/{sub}" if sub else "system"))

    @staticmethod
    def _api_error_type(line: _Line) -> str:
        """``apiErrorType`` (2.1.332), else the line's ``error``: the CLI's category of the failure
        (``server_error``, ``unknown``), as on the stdout line of the same error."""
        if line.apiErrorType:
            return line.apiErrorType
        raw = present(line.error)
        if raw is not None:
            try:
                kind = _ERROR_KIND.decode(raw)
            except msgspec.ValidationError:
                kind = ""
            if kind:
                return kind
        return "api_error"

    @staticmethod
    def _api_error_text(line: _Line) -> str:
        err = _ApiError()
        raw = present(line.error)
        if raw is not None:
            try:
                err = _API_ERROR.decode(raw)
            except msgspec.ValidationError:
                err = _ApiError()
        text = f"API error: {err.formatted or err.message or 'unknown'}"
        if line.retryAttempt is not None:
            text += f" (retry {line.retryAttempt} of {line.maxRetries})"
        return text

    @staticmethod
    def _attachment_line(att: _Attachment, items: list[Item]) -> None:
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
            tokens = Tokens(input=inp + cr + cw, output=out, total=inp + out + cr + cw, cache_read=cr, cache_write=cw)
        cost = Cost(amount=line.totalCostUSD, currency="USD", source="agent") if line.totalCostUSD is not None else None
        items.append(Usage(tokens=tokens, cost=cost, scope="session"))

    def _title(self, line: _Line, items: list[Item]) -> None:
        title = line.customTitle or line.aiTitle or line.summary
        items.append(SessionInfo(title=title) if title is not None else Passthrough(method=line.type))


def _more(now: Tokens, given: Tokens) -> Tokens | None:
    """What ``now`` counts beyond ``given`` (None: nothing more, or a count went down)."""
    fields = ("input", "output", "total", "cache_read", "cache_write", "reasoning")
    diff = {f: (getattr(now, f) or 0) - (getattr(given, f) or 0) for f in fields}
    if any(d < 0 for d in diff.values()) or not any(diff.values()):
        return None
    return Tokens(**{f: d if d or getattr(now, f) is not None else None for f, d in diff.items()})


ClaudeTranscriptAdapter._TYPES = {
    "user": ClaudeTranscriptAdapter._user,
    "assistant": ClaudeTranscriptAdapter._assistant,
    "system": ClaudeTranscriptAdapter._system,
    "cost-state": ClaudeTranscriptAdapter._cost_state,
    "summary": ClaudeTranscriptAdapter._title,
    "custom-title": ClaudeTranscriptAdapter._title,
    "ai-title": ClaudeTranscriptAdapter._title,
}
