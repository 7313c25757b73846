"""The `codex-rollout` adapter: Codex's stored session files.

``~/.codex/sessions/YYYY/MM/DD/rollout-<local time>-<thread id>.jsonl``, read back as a
replay (``stored = True``: every event has ``origin: "replay"``).

Facts (codex-cli 0.169.0 captures in adapters/codex-rollout/captures/codex-0.169.0; older
shapes from 0.104.0-alpha.1 files and the protocol reference):

* A line is ``{"timestamp": "<ISO 8601>Z", "ordinal": N, "type": ..., "payload": {...}}``
  (``ordinal`` is new in 0.169), snake_case inside.  ``type`` is ``session_meta`` (the
  first line), ``turn_context``, ``response_item`` (the raw Responses-API items sent to or
  received from the model), ``event_msg`` (a persisted subset of Codex's events),
  ``compacted``, and in 0.169 ``world_state`` and ``token_usage_record``.
* The oldest files have no envelope: a first line ``{id, timestamp, instructions, git}``,
  then bare response items and ``{"record_type": "state"}`` lines.  In 0.29 an
  injected ``<environment_context>`` user message is the only line naming the folder
  (``<cwd>``): read as ``session-info``.
* The same content is written twice: a user prompt is a ``response_item`` message *and*
  an ``event_msg`` (``user_message`` up to about 0.104, ``item_completed`` /
  ``UserMessage`` in 0.169); likewise assistant messages and reasoning summaries.  The
  ``event_msg`` side is the one used here (it leaves out the injected
  ``<environment_context>`` and ``<turn_aborted>`` user messages and the developer
  instructions); the ``response_item`` copies are kept as ``session.update``.  Files
  without envelope have no ``event_msg``: there the response items are the source.
* Tools: the call is a ``response_item`` ``function_call`` / ``custom_tool_call``
  (``call_id``); in 0.169 its end is an ``event_msg`` ``item_completed`` with a
  PascalCase core item (``CommandExecution`` argv ``command`` and ``file://`` ``cwd``,
  ``FileChange`` whose ``changes`` is a *map* path -> change, ``McpToolCall`` with
  camelCase fields inside), followed by the ``function_call_output`` the model saw (kept
  as ``session.update``).  Up to 0.104 there is no item: the output ends the call, and a
  command's output is what it printed, as Codex exec gives it: the header Codex writes
  for the model (``Exit code: N``, ``Wall time: ...``, ``Output:``) or the JSON older
  files wrap it in (``{"output": ..., "metadata": {"exit_code": N}}``) gives the exit
  code and is left out.  A
  declined command has no ``CommandExecution`` item in 0.169 either, only an output
  ``exec_command failed: ... rejected by user``.
* ``update_plan`` is only a ``function_call`` (its output is ``"Plan updated"``).
  ``tool_search_call`` / ``tool_search_output`` are deferred-tool lookups no other Codex
  surface shows.
* ``token_count`` events: ``info`` is null (rate limits only) or holds the thread's
  cumulative ``total_token_usage``, the last request's ``last_token_usage`` and
  ``model_context_window``.  The same snapshot is written again without a new request
  (0.104 after every ``turn_context``, 0.169 after a context overflow).  On a context
  overflow (0.169) both usages are zero except ``total_tokens`` = the window.
  ``token_usage_record`` (0.169) repeats the same numbers per response.
* ``turn_context`` is written once per turn in 0.169, before every model request in
  0.104 (identical copies).
* A failed turn is only ``task_complete`` with ``error {message, codex_error_info}``
  (``error`` events are not persisted in 0.169); an interrupted one is ``turn_aborted``.
  Deltas, approvals, plan and diff updates are never stored.
* Up to 0.96 (real files in captures/external-*; 0.40, 0.66, 0.77; recorded 0.77, 0.96)
  there is no ``task_started`` / ``task_complete``: a turn is a ``user_message`` (after its
  ``response_item`` copy), then ``turn_context`` before every model request; only an
  interrupt is written (``turn_aborted``).  The turns such files never wrote are inferred
  by the rules of "Turn inference" below.
* A command Codex runs as ``apply_patch`` itself (``shell ["apply_patch", patch]``, an
  ``apply_patch`` heredoc through ``exec_command`` or ``bash -lc``: what older Codex asks
  the model to write when it offers no ``apply_patch`` tool) is stored as that command
  only; it is read as the patch it was (the live streams say a file change).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal, get_args

import msgspec
from msgspec import Raw, structs

from normalize import (
    Body,
    Compaction,
    ContextApplied,
    ContextDegraded,
    ContextDrop,
    ContextUpdated,
    ContextWindow,
    Direction,
    Emit,
    Error,
    Item,
    MalformedMessage,
    McpTool,
    ModeUpdate,
    OpenCall,
    Passthrough,
    PermissionsUpdate,
    Plan,
    PlanEntry,
    Sample,
    SessionCreated,
    SessionInfo,
    SessionRecord,
    Source,
    Subagent,
    Tokens,
    ToolCall,
    TurnComplete,
    TurnStart,
    Usage,
    WebSearch,
    session_id_for,
    tokens_since,
)
from normalize.adapters import _codex_items as ci
from normalize.adapters._limits import OPEN_CALLS, Bounded, Recent

from ._base import BuiltinAdapter, TextMemo
from ._codex_rollout_views import (
    Event,
    _any_decoder,
    _Command,
    _Compacted,
    _compacted_decoder,
    _context_decoder,
    _CoreItem,
    _Event,
    _event_decoder,
    _Invocation,
    _legacy_output_decoder,
    _Line,
    _line_decoder,
    _Meta,
    _meta_decoder,
    _PathChange,
    _RItem,
    _ritem_decoder,
    _Text,
    _Tok,
    _TurnContext,
    _typed_line_decoder,
    _TypedLine,
)

__all__ = ["CodexRolloutAdapter"]

# ---------------------------------------------------------------- wire views
#
# The views are ``gc=False``: decoded JSON holds no reference cycles, and a struct the
# garbage collector does not track is cheaper to make and adds nothing to its passes.


#: each typed line view's envelope type (its tag)
_TAGS: Final[dict[type, str]] = {cls: cls.__struct_config__.tag for cls in get_args(_TypedLine)}
#: a release's base instructions, the same at the start of each of its sessions: read
#: once, given as one str (and, beyond ASCII, encoded once)
_INSTRUCTIONS: Final = TextMemo()

#: the payload's decoder of each envelope type read as ``_Line`` (payload raw)
_PAYLOADS: Final[dict[str, msgspec.json.Decoder[Any]]] = {
    "session_meta": _meta_decoder,
    "turn_context": _context_decoder,
    "response_item": _ritem_decoder,
    "event_msg": _event_decoder,
    "compacted": _compacted_decoder,
}

#: Envelope line types (detection; anything else in an envelope is passed through).
LINE_TYPES: Final = frozenset(
    {"session_meta", "turn_context", "response_item", "event_msg", "compacted", "world_state", "token_usage_record"}
)
#: Response item types a bare (envelope-less) line may have.
RESPONSE_ITEM_TYPES: Final = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
        "tool_search_call",
        "tool_search_output",
        "compaction",
    }
)

#: How the user messages Codex injects itself begin (context, not the user's words).
INJECTED: Final = ("<environment_context>", "<turn_aborted>", "<user_instructions>", "# AGENTS.md instructions")
#: the folder an ``<environment_context>`` message names
_ENV_CWD: Final = re.compile(r"<cwd>([^<\n]+)</cwd>")

#: Tools that run a shell command.
SHELL_TOOLS: Final = frozenset({"shell", "exec_command", "container.exec", "local_shell", "shell_command"})


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def _error_type(info: Raw) -> str | None:
    """``codex_error_info`` as app-server spells it (camelCase; rollout files write snake_case)."""
    name = ci.error_type(_any_decoder.decode(info))
    return _camel(name) if name is not None else None


def _tokens(t: _Tok) -> Tokens:
    return ci.tokens(
        input=t.input_tokens,
        output=t.output_tokens,
        total=t.total_tokens,
        cached=t.cached_input_tokens,
        cache_write=t.cache_write_input_tokens,
        reasoning=t.reasoning_output_tokens,
    )


def _texts(parts: list[_Text] | None, kinds: tuple[str, ...]) -> str:
    return "".join(p.text or "" for p in parts or () if p.type in kinds)


def _output_text(output: Raw) -> str | None:
    """A tool output as the model saw it: a string, or ``{"content": ...}`` in older files."""
    value = _any_decoder.decode(output)
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        content = value.get("content")
        if isinstance(content, str):
            return content
    return None


_EXIT_MARKERS: Final = ("Process exited with code ", "Exit code: ")
#: how far into an output its header is looked for: the lines before ``Output:``
_HEADER_CHARS: Final = 512


def _command_result(text: str) -> tuple[str, int | None]:
    """What a command printed and its exit code, from its output as the model saw it.

    Codex writes a header first (``Exit code: N`` or ``Process exited with code N``, the
    wall time, ...) and ``Output:``, then what the command printed; older files write
    ``{"output": ..., "metadata": {"exit_code": N}}``.  Other text is returned whole,
    without a code.  Only the header is read for the code: a command's own output that
    prints such a line (a log, a test run) does not change the code of the command.
    """
    if text.startswith("{"):
        try:
            legacy = _legacy_output_decoder.decode(text)
        except msgspec.DecodeError:
            pass  # not JSON: a header, perhaps
        else:
            meta = legacy.metadata
            code = meta.get("exit_code") if isinstance(meta, dict) else None
            printed = legacy.output if isinstance(legacy.output, str) else text
            return printed, int(code) if isinstance(code, int) else None
    head = text[:_HEADER_CHARS]
    end = head.find("\nOutput:")
    if end >= 0:
        head = head[:end]
    for marker in _EXIT_MARKERS:
        at = head.find(marker)
        if at >= 0:
            start = at + len(marker)
            digits = text[start : start + 24].split("\n", 1)[0].strip()
            if digits.lstrip("-").isdigit():
                if end < 0:
                    return text, int(digits)
                after = end + len("\nOutput:")
                return text[after + 1 if text.startswith("\n", after) else after :], int(digits)
    return text, None


def _rejected(text: str) -> bool:
    """Whether an output without an exit code says the user declined the call: ``patch
    rejected by user``, ``exec command rejected by user``, ``exec_command failed: ...``.

    Only the whole message counts: a command's output that mentions a rejection (a search
    through Codex's own sources) is the output of a command that ran."""
    return text.startswith("exec_command failed") or text.rstrip().endswith("rejected by user")


def _args(arguments: Raw) -> Any:
    """Function-call arguments: a JSON string holding an object (parsed), or as given."""
    value = _any_decoder.decode(arguments)
    if isinstance(value, str):
        try:
            return _any_decoder.decode(value.encode())
        except msgspec.DecodeError:
            return value
    return value


def _plan(arguments: Raw) -> Plan | None:
    args = _args(arguments)
    if not isinstance(args, dict) or not isinstance(args.get("plan"), list):
        return None
    entries = [
        PlanEntry(content=str(e.get("step", "")), status=ci.plan_status(str(e.get("status"))))
        for e in args["plan"]
        if isinstance(e, dict)
    ]
    explanation = args.get("explanation")
    return Plan(entries=entries, explanation=explanation if isinstance(explanation, str) else None)


def _mcp_name(name: str, namespace: str | None) -> tuple[str, str] | None:
    """(server, tool) of an MCP tool call: namespace ``mcp__<server>`` (0.169) or name
    ``mcp__<server>__<tool>`` (older)."""
    if namespace and namespace.startswith("mcp__"):
        return namespace[len("mcp__") :], name
    if name.startswith("mcp__") and name.count("__") >= 2:
        _, server, tool = name.split("__", 2)
        return server, tool
    return None


class CodexRolloutAdapter(BuiltinAdapter):
    protocol = "codex-rollout"
    announces_session = True
    agent = "codex"
    stored = True
    default_paths = ("~/.codex/sessions",)

    def __init__(self) -> None:
        super().__init__()
        self._method: str | None = None
        self._n = 0  # native position of the line being fed (for ids of id-less items)
        #: whether the file has the envelope; without it the response items are the source
        self._enveloped = True
        self._searches: Recent = Recent()
        self._compacted = False
        self._total: _Tok | None = None
        self._snapshot: tuple[_Tok, _Tok | None] | None = None
        self._turn_base: _Tok | None = None
        self._turn_error: str | None = None
        self._context: tuple[bytes, ...] | None = None
        self._mode: tuple[str | None, str | None] | None = None
        self._cwd: str | None = None
        #: turn inference (files without task events, see Turn inference)
        self._task_events = False
        self._inferred_open = False
        self._prompted = False
        self._reply_due = False
        self._aborted: tuple[str | None, str | None, str | None] | None = None
        self._ts: str | None = None
        #: envelope type -> its handler, given the line's payload decoded (``_PAYLOADS``)
        self._lines: dict[str, Callable[[Any], list[Item]]] = {
            "session_meta": self._session_meta,
            "turn_context": self._turn_context,
            "response_item": self._response_item_line,
            "event_msg": self._event_msg,
            "compacted": self._compacted_line,
        }
        self._ritems: dict[str, Callable[[_RItem], list[Item]]] = {
            "message": self._message,
            "reasoning": self._reasoning_item,
            "function_call": self._function_call,
            "custom_tool_call": self._custom_tool_call,
            "local_shell_call": self._local_shell_call,
            "function_call_output": self._call_output,
            "custom_tool_call_output": self._call_output,
            "web_search_call": self._web_search_call,
        }
        self._events: dict[str, Callable[[_Event], list[Item]]] = {
            "task_started": self._task_started,
            "turn_started": self._task_started,
            "task_complete": self._task_complete,
            "turn_complete": self._task_complete,
            "turn_aborted": self._turn_aborted,
            "user_message": self._user_message,
            "agent_message": self._agent_message,
            "agent_reasoning": self._agent_reasoning,
            "token_count": self._token_count,
            "item_completed": self._item_completed,
            "sub_agent_activity": self._sub_agent_activity,
            "exec_command_begin": self._exec_begin,
            "exec_command_end": self._exec_end,
            "patch_apply_begin": self._patch_begin,
            "patch_apply_end": self._patch_end,
            "mcp_tool_call_begin": self._mcp_begin,
            "mcp_tool_call_end": self._mcp_end,
            "web_search_end": self._web_search_end,
            "error": self._error_event,
            "context_compacted": self._context_compacted,
        }
        self._core_items: dict[str, Callable[[_CoreItem], list[Item]]] = {
            "UserMessage": self._core_user,
            "AgentMessage": self._core_agent,
            "Reasoning": self._core_reasoning,
            "CommandExecution": self._core_command,
            "FileChange": self._core_file_change,
            "McpToolCall": self._core_mcp,
            "WebSearch": self._core_web_search,
            "ContextCompaction": self._core_compaction,
            "SubAgentActivity": self._core_subagent,
        }
        #: sub-agent threads spawned -> the spawning call, while they run
        self._subagents: Bounded[str, str] = Bounded("sub-agent", OPEN_CALLS)
        #: sub-agents that ended (a follow-up may run one again: its later ends are the
        #: ``subagent``'s alone, the spawn's ``task`` ended once)
        self._ended_subagents = Recent()
        #: the method (``event_msg:<type>``, ``response_item:<type>``) of each type translated, made once
        self._event_methods = {t: f"event_msg:{t}" for t in self._events}
        self._item_methods = {t: f"response_item:{t}" for t in self._ritems}

    # ------------------------------------------------------------- detection

    @classmethod
    def detect(cls, sample: Sequence[Sample]) -> float:
        """The first line of the rollout envelope decides; lines of an unknown ``type`` before it are tolerated."""
        for n, (data, _) in enumerate(sample[:5]):
            try:
                line = _line_decoder.decode(data)
            except msgspec.DecodeError:
                return 0.0
            if line.timestamp is None:
                return 0.0
            if line.type in LINE_TYPES and bytes(line.payload) != b"null":
                return 0.95 if line.type == "session_meta" else 0.8
            if n == 0 and line.type is None and line.id is not None:
                return 0.7  # the oldest files: {id, timestamp, instructions, git}
            if line.type is None or bytes(line.payload) == b"null":
                return 0.0
            # an enveloped line of a type this version does not know: look at the next
        return 0.0

    # ------------------------------------------------------------------ feed

    def feed(self, message: bytes, from_: Direction = "agent") -> list[Item]:
        self._check_open()
        self._n += 1
        try:
            typed: _TypedLine | None = _typed_line_decoder.decode(message)
        except msgspec.DecodeError:  # not one of the union's lines: read as before, below
            typed = None
        try:
            if typed is not None:
                kind = _TAGS[type(typed)]
                return self._translate(kind, typed.timestamp, self._lines[kind], typed.payload)
            return self._dispatch(_line_decoder.decode(message), message)
        except msgspec.DecodeError as exc:
            raise MalformedMessage(f"not a codex rollout line: {exc}") from None

    def _dispatch(self, line: _Line, message: bytes) -> list[Item]:
        if line.type is None or line.payload == ci.NULL:
            return self._bare(line, message)
        handler = self._lines.get(line.type)
        if handler is None:
            return [Source(method=line.type, ts=line.timestamp), Passthrough(method=line.type)]
        return self._translate(line.type, line.timestamp, handler, _PAYLOADS[line.type].decode(line.payload))

    def _translate(self, kind: str, ts: str | None, handler: Callable[[Any], list[Item]], payload: Any) -> list[Item]:
        """An enveloped line of a type the adapter translates, its payload decoded."""
        self._method = kind
        self._ts = ts
        out = handler(payload)  # (a list of the handler's own: the Source goes into it)
        # A SessionCreated must come first; the Source applies to the bodies after it.
        at = 1 if out and type(out[0]) is SessionCreated else 0  # (made here: a type test)
        out.insert(at, Source(method=self._method, ts=ts))
        return out

    def _bare(self, line: _Line, message: bytes) -> list[Item]:
        """The oldest files: a meta line, bare response items, state lines."""
        if line.type is None and line.record_type is None and line.id is not None and self._n == 1:
            self._enveloped = False
            record = SessionRecord(id="", agent="", protocol="", native_session_id=line.id, created_at=line.timestamp)
            out: list[Item] = [
                SessionCreated(session_id="", record=record),
                Source(method="session", ts=line.timestamp),
            ]
            if line.instructions:
                out.append(_instructions(line.instructions))
            return out
        if line.type in RESPONSE_ITEM_TYPES:
            self._enveloped = False
            return [Source(method=line.type), *self._response_item(_ritem_decoder.decode(message))]
        return [Passthrough(method=line.record_type or line.type)]

    def close(self) -> list[Item]:
        self._closed = True
        out: list[Item] = []
        self._infer_end(out, at_end=True)
        # a file cut before its turn ended: the core settles the calls it left open (docs/adapters.md)
        return out

    # ------------------------------------------------------------ line types

    def _session_meta(self, meta: _Meta) -> list[Item]:
        base = meta.base_instructions
        where = "base_instructions.text" if base is not None else "instructions"
        try:  # before any state changes
            text = _INSTRUCTIONS.text(base.text if base is not None else meta.instructions)
        except msgspec.DecodeError as exc:  # said as the payload's decoder says it
            raise msgspec.DecodeError(f"{exc} - at `$.{where}`") from None
        record = SessionRecord(
            id="",
            agent="",
            protocol="",
            native_session_id=meta.id,
            cwd=meta.cwd,
            created_at=meta.timestamp,
            agent_version=meta.cli_version,
            # a sub-agent's thread (multi_agent): linked to the session that spawned it
            parent_id=session_id_for("codex", parent) if (parent := meta.parent) else None,
        )
        self._cwd = meta.cwd
        out: list[Item] = [SessionCreated(session_id="", record=record)]
        if text:
            out.append(_instructions(text))
        return out

    def _turn_context(self, ctx: _TurnContext) -> list[Item]:
        out: list[Item] = []
        if not self._task_events and not self._inferred_open:
            self._infer_start(out)  # a model request with no turn open: its turn began here
        mode = (ctx.collaboration_mode.mode if ctx.collaboration_mode else None, ctx.model)
        if mode != self._mode:
            self._mode = mode
            out.append(ModeUpdate(mode_id=mode[0], model=mode[1]))
        perms = (bytes(ctx.approval_policy), bytes(ctx.sandbox_policy))
        if perms != self._context:
            self._context = perms
            spec = {
                "approval_policy": ci.raw_or_none(ctx.approval_policy),
                "sandbox_policy": ci.raw_or_none(ctx.sandbox_policy),
            }
            out.append(PermissionsUpdate(spec=spec, applied="now"))
        if ctx.cwd is not None and ctx.cwd != self._cwd:
            self._cwd = ctx.cwd
            out.append(SessionInfo(cwd=ctx.cwd))
        # the same settings again (older files: every request)
        return out if any(not isinstance(i, Emit) for i in out) else [*out, Passthrough()]

    def _compacted_line(self, compacted: _Compacted) -> list[Item]:
        self._compacted = True
        return [
            Compaction(compaction_id=f"compaction@{self._n}", status="completed", summary=compacted.message or None)
        ]

    # -------------------------------------------------------- response items

    def _response_item_line(self, item: _RItem) -> list[Item]:
        self._method = self._item_methods.get(item.type) or f"response_item:{item.type}"
        return self._response_item(item)

    def _response_item(self, item: _RItem) -> list[Item]:
        handler = self._ritems.get(item.type)
        if handler is None:
            return [Passthrough()]
        return handler(item)

    def _message(self, item: _RItem) -> list[Item]:
        if self._enveloped or item.role not in ("user", "assistant"):
            # the event_msg copy is the source; developer/system text is instructions
            return [Passthrough()]
        if item.role == "user":
            text = _texts(item.content, ("input_text",))
            if text.startswith(INJECTED):
                return self._environment(text)
            return [*self._infer_prompt(), ci.user_message(item.id or f"user@{self._n}", [text])]
        self._reply_due = False
        return [ci.agent_message(item.id or f"msg@{self._n}", _texts(item.content, ("output_text",)))]

    def _environment(self, text: str) -> list[Item]:
        """An injected message of a file without envelope: its ``<environment_context>``
        (0.2x) is where such a file names its folder (no ``session_meta`` cwd, no
        ``turn_context``); relative patch paths are read against it."""
        m = _ENV_CWD.search(text) if text.startswith("<environment_context>") else None
        if m is None or m[1] == self._cwd:
            return [Passthrough()]
        self._cwd = m[1]
        return [SessionInfo(cwd=m[1])]

    def _reasoning_item(self, item: _RItem) -> list[Item]:
        if self._enveloped:
            return [Passthrough()]
        summary = [p.text or "" for p in item.summary or ()]
        content = [p.text or "" for p in item.content or () if p.type in ("reasoning_text", "text")]
        return [ci.reasoning(item.id or f"rs@{self._n}", summary, content)]

    @staticmethod
    def _start(started: ToolCall, note: Any, *more: Body) -> list[Item]:
        """A call's start, with what its end repeats (its note in the core's table of calls)."""
        return [Emit(body=started, note=note), *more]

    def _function_call(self, item: _RItem) -> list[Item]:
        call_id = item.call_id or item.id or f"call@{self._n}"
        name = item.name or ""
        if name == "update_plan":
            plan = _plan(item.arguments)
            return [plan] if plan is not None else [Passthrough()]
        mcp = _mcp_name(name, item.namespace)
        args = _args(item.arguments)
        if mcp is not None:
            return _mcp_start(call_id, *mcp, args)
        if name in SHELL_TOOLS:
            cmd = args.get("cmd") or args.get("command") if isinstance(args, dict) else None
            command = cmd if isinstance(cmd, str | list) else ""
            workdir = args.get("workdir") if isinstance(args, dict) else None
            cwd = workdir if isinstance(workdir, str) else None
            patch = _patch_invocation(command)
            if patch is not None:
                # Codex runs an apply_patch command as a patch, not in a shell: the live
                # streams say a file change, the file only the command the model wrote
                text, cd = patch
                changes = _patch_changes(text, _joined(cwd or self._cwd, cd))
                return self._start(ci.patch_started(call_id, changes), _Patch(changes))
            return self._start(ci.command_started(call_id, command, cwd), _Command(command=command, cwd=cwd))
        body = ToolCall(call_id=call_id, tool=name, phase="started", title=name, category="other", input=args)
        return self._start(body, body)

    def _custom_tool_call(self, item: _RItem) -> list[Item]:
        call_id = item.call_id or item.id or f"call@{self._n}"
        name = item.name or ""
        if name == "apply_patch":
            changes = _patch_changes(item.input or "", self._cwd)
            return self._start(ci.patch_started(call_id, changes), _Patch(changes))
        body = ToolCall(call_id=call_id, tool=name, phase="started", title=name, category="other", input=item.input)
        return self._start(body, body)

    def _local_shell_call(self, item: _RItem) -> list[Item]:
        call_id = item.call_id or item.id or f"call@{self._n}"
        action = _any_decoder.decode(item.action)
        cmd = action.get("command") if isinstance(action, dict) else None
        command = cmd if isinstance(cmd, str | list) else ""
        return self._start(ci.command_started(call_id, command, None), _Command(command=command))

    def _call_output(self, item: _RItem) -> list[Item]:
        self._reply_due = True  # the model answers a tool output
        call = self.calls.get(item.call_id or "")
        if call is None:
            # finished already (a core item), or a plan update: the output repeats it
            return [Passthrough()]
        text = _output_text(item.output)
        if text is None:
            return self._finish_call(call, "completed", ci.raw_or_none(item.output), None)
        printed, code = _command_result(text)
        if code is None and _rejected(text):
            status = "declined"
        else:
            status = "failed" if code not in (None, 0) else "completed"
        # a command's output is what it printed, as the other Codex formats give it
        out = self._finish_call(call, status, printed if isinstance(call.note, _Command) else text, code)
        if isinstance(call.note, ToolCall) and call.note.tool in _COLLAB_OUTPUTS and status == "completed":
            out += self._collab_output(call.note, text)
        return out

    def _collab_output(self, call: ToolCall, text: str) -> list[Item]:
        """0.96's collab tools store a spawn and a sub-agent's end only in the output the
        model saw: ``spawn_agent``'s ``{"agent_id"}`` starts that sub-agent (its own rollout
        names this thread as its parent), ``wait``'s ``{"status": {id: {state: ...}}}`` ends
        the sub-agents in a final state, as the live ``collabAgentToolCall`` does."""
        try:
            value = _any_decoder.decode(text)
        except msgspec.DecodeError:
            return []
        if not isinstance(value, dict):
            return []
        out: list[Item] = []
        if call.tool == "spawn_agent":
            agent = value.get("agent_id")
            if isinstance(agent, str) and agent and agent not in self._subagents:
                self._subagents[agent] = call.call_id
                message = call.input.get("message") if isinstance(call.input, dict) else None
                prompt = message if isinstance(message, str) else None
                out += ci.collab_subagent(agent, "started", call.call_id, prompt=prompt)
            return out
        states = value.get("status")
        for agent, state in states.items() if isinstance(states, dict) else ():
            name = next(iter(state), None) if isinstance(state, dict) else state
            phase = ci.AGENT_END.get(name) if isinstance(name, str) else None
            spawn = self._subagents.pop(agent, None) if phase is not None else None
            if phase is not None and spawn is not None:
                out += ci.collab_subagent(agent, phase, spawn)
        return out

    def _finish_call(self, call: OpenCall, status: str, output: Any, exit_code: int | None) -> list[Item]:
        """The end of a call known only from its output (older files, declined commands)."""
        note = call.note
        if isinstance(note, _Command):
            text = output if isinstance(output, str) and status != "declined" else None
            return list(
                ci.command_finished(
                    call.call_id,
                    note.command,
                    note.cwd,
                    status,
                    text,
                    exit_code,
                    output_streamed=False,
                    title=call.title,
                )
            )
        if isinstance(note, McpTool):
            failed = status != "completed"
            return list(
                ci.mcp_finished(
                    call.call_id,
                    note.server,
                    note.tool,
                    note.arguments,
                    status,
                    None if failed else output,
                    output if failed else None,
                )
            )
        if isinstance(note, _Patch):
            return [ci.patch_finished(call.call_id, note.changes, status)]
        # another call: its start repeated, with its outcome
        phase = ci.phase_of(status)
        if isinstance(note, ToolCall):
            return [structs.replace(note, phase=phase, output=output)]
        return [ToolCall(call_id=call.call_id, tool="", phase=phase, output=output)]

    def _web_search_call(self, item: _RItem) -> list[Item]:
        if item.id is not None and item.id in self._searches:
            return [Passthrough()]  # the WebSearch item said it first
        action = _any_decoder.decode(item.action)
        query = action.get("query") or action.get("url") if isinstance(action, dict) else None
        return [
            WebSearch(
                call_id=item.id or f"ws@{self._n}",
                phase="failed" if item.status == "failed" else "completed",
                query=query if isinstance(query, str) else None,
            )
        ]

    # ------------------------------------------------------------ event_msg

    def _event_msg(self, event: _Event) -> list[Item]:
        self._method = self._event_methods.get(event.type) or f"event_msg:{event.type}"
        return self._event(event)

    def _event(self, event: _Event) -> list[Item]:
        handler = self._events.get(event.type)
        if handler is None:
            return [Passthrough()]
        return handler(event)

    def feed_event(self, payload: Event | Raw) -> list[Item]:
        """What ``feed`` gives for an ``event_msg`` line of this payload, without its ``Source``.

        For the older ``codex exec --json`` shape, whose ``msg`` is such a payload: the
        payload decoded with the line (an :data:`Event`) or, when that view could not take
        the line, as Raw, decoded here with the same error as ``feed``'s.  The line has no
        timestamp.
        """
        self._check_open()
        self._n += 1
        self._ts = None
        try:
            event = _event_decoder.decode(payload) if isinstance(payload, Raw) else payload
            handler = self._events.get(event.type)  # as _event, one call less on this path
            return handler(event) if handler is not None else [Passthrough()]
        except msgspec.DecodeError as exc:
            raise MalformedMessage(f"not a codex rollout line: {exc}") from None

    def _task_started(self, event: _Event) -> list[Item]:
        out: list[Item] = []
        self._infer_end(out)  # a file that starts writing task events: the inferred turn is over
        self._task_events = True
        self._turn_state()
        out.append(TurnStart())
        return out

    def _turn_state(self) -> None:
        """A turn begins: its usage is counted from here; no call of it has finished yet."""
        self._turn_base = self._total
        self._turn_error = None
        self._searches.clear()

    def _end_turn(self, event: _Event | None) -> list[Item]:
        out: list[Item] = []
        self._inferred_open = self._prompted = self._reply_due = False
        if self._total is not None and self._total != self._turn_base:
            base = self._turn_base or _Tok()
            out.append(Usage(tokens=tokens_since(_tokens(self._total), _tokens(base)), scope="turn"))
        self._turn_base = self._total
        # calls left open when the turn ended never finished (the turn failed or was stopped):
        # the core fails them, and their MCP views, at the turn's end
        return out

    def _task_complete(self, event: _Event) -> list[Item]:
        out = self._end_turn(event)
        err = event.error
        if err is not None:
            message = err if isinstance(err, str) else err.message
            etype = None if isinstance(err, str) else _error_type(err.codex_error_info)
            if message != self._turn_error:
                out.append(Error(message=message, error_type=etype, recoverable=False))
            if etype == "contextWindowExceeded":  # as the live adapter: the context overflowed
                out.append(ContextDegraded(session_id="", dropped=[ContextDrop(what="message", reason=message)]))
            out.append(ci.failed_turn(event.turn_id))
        else:
            out.append(TurnComplete(reason="ok", stop_reason="completed", native_turn_id=event.turn_id))
        return out

    def _turn_aborted(self, event: _Event) -> list[Item]:
        if self._inferred_open:
            # rule 3: the items of the stopped request are written after this line
            self._aborted = (event.reason, event.turn_id, self._ts)
            return [Passthrough()]
        out = self._end_turn(event)
        out.append(TurnComplete(reason="interrupt", stop_reason=event.reason, native_turn_id=event.turn_id))
        return out

    def _user_message(self, event: _Event) -> list[Item]:
        return [*self._infer_prompt(), ci.user_message(f"user@{self._n}", [event.message or ""])]

    def _agent_message(self, event: _Event) -> list[Item]:
        self._reply_due = False
        return [ci.agent_message(f"msg@{self._n}", event.message or "")]

    # ------------------------------------------------------------ turn inference
    #
    # Files without task events (up to 0.77) write no turn start or end but an interrupt.
    # The rules, kept in one place:
    #
    # 1. A user message (the ``user_message`` event; the response item in files without
    #    envelope) starts a turn, unless the open inferred turn has no prompt yet (a
    #    ``turn_context`` opened it).  A ``turn_context`` with no turn open starts one.
    # 2. A turn is over when the next one starts, or at the end of the file, as completed
    #    (``ok``, made up, with its usage) when nothing is pending: no call without its
    #    output, and the model answered after the last prompt or tool output.  When something
    #    is pending the turn is left open: the Session closes it as ``interrupt`` at the next
    #    start, as cut off at the end of the file.
    # 3. ``turn_aborted`` ends the turn as interrupted; these files write the items of the
    #    stopped request after it (a call and its ``patch rejected by user`` output), so the
    #    inferred turn ends when the next one starts or the file ends: a made-up
    #    ``turn-complete`` (``interrupt``, at the ``turn_aborted`` time) after those items,
    #    and the ``turn_aborted`` line itself is kept as ``session.update``.
    # 4. Once a ``task_started`` is seen the file writes its own turns: no rule applies.

    def _pending(self) -> bool:
        return self._reply_due or bool(self.calls)

    def _infer_prompt(self) -> list[Item]:
        """Rule 1 for a user message; what comes before its event."""
        out: list[Item] = []
        if not self._task_events and (not self._inferred_open or self._prompted):
            self._infer_start(out)
        # (otherwise the turn a turn_context opened gets its prompt)
        self._prompted = self._reply_due = True
        return out

    def _infer_start(self, out: list[Item]) -> None:
        self._infer_end(out)
        self._turn_state()
        self._inferred_open = True
        self._prompted = False
        out.append(Emit(body=TurnStart(), synthetic=True))

    def _infer_end(self, out: list[Item], *, at_end: bool = False) -> None:
        """Rule 2: the open inferred turn ends ``ok`` when nothing is pending (rule 3: interrupted)."""
        if not self._inferred_open:
            return
        if self._aborted is not None:
            reason, turn_id, ts = self._aborted
            self._aborted = None
            ended = self._end_turn(None)
            out.extend(Emit(body=b, synthetic=True, ts=ts) for b in ended if isinstance(b, Body))
            end = TurnComplete(reason="interrupt", stop_reason=reason, native_turn_id=turn_id)
            out.append(Emit(body=end, synthetic=True, ts=ts))
            return
        if self._pending():
            # left open: the Session settles it (interrupt at the next start, cut-off at the end)
            if at_end:
                self._inferred_open = self._prompted = self._reply_due = False
            else:  # its calls never finished: they fail inside it, before the next start
                out.extend(Emit(body=b, synthetic=True) for b in self._end_turn(None) if isinstance(b, Body))
            return
        ended = self._end_turn(None)
        out.extend(Emit(body=b, synthetic=True) for b in ended if isinstance(b, Body))
        out.append(Emit(body=TurnComplete(reason="ok"), synthetic=True))

    def _agent_reasoning(self, event: _Event) -> list[Item]:
        return [ci.reasoning(f"rs@{self._n}", [event.text or ""])]

    def _token_count(self, event: _Event) -> list[Item]:
        info = event.info
        if info is None and event.input_tokens is not None:
            # about 0.2x: one request's usage, flat (no running total)
            flat = _Tok(
                input_tokens=event.input_tokens,
                cached_input_tokens=event.cached_input_tokens,
                output_tokens=event.output_tokens,
                reasoning_output_tokens=event.reasoning_output_tokens,
                total_tokens=event.total_tokens,
            )
            return [Usage(tokens=_tokens(flat), scope="call")]
        if info is None or info.total_token_usage is None:
            return [Passthrough()]  # rate limits only
        snapshot = (info.total_token_usage, info.last_token_usage)
        if snapshot == self._snapshot:
            return [Passthrough()]  # the same snapshot again: no new model request
        self._snapshot = snapshot
        total, last = snapshot
        if total.input_tokens == 0 and total.output_tokens == 0 and total.total_tokens > 0:
            # A context overflow: Codex reports the window as "used", no tokens were spent.
            # Kept as context only, so it never counts as usage.
            return [
                Usage(context=ContextWindow(used=total.total_tokens, size=info.model_context_window), scope="session")
            ]
        self._total = total
        out: list[Item] = []
        context = None
        if last is not None:
            out.append(Usage(tokens=_tokens(last), scope="call"))
            context = ContextWindow(used=last.total_tokens, size=info.model_context_window)
        out.append(Usage(tokens=_tokens(total), context=context, scope="session"))
        return out

    def _error_event(self, event: _Event) -> list[Item]:
        # Codex persists terminal errors only (retry notices are not stored); shaped
        # like the live adapters' terminal error
        self._turn_error = event.message or ""
        return [ci.error_notice(self._turn_error, retrying=False)]

    def _context_compacted(self, event: _Event) -> list[Item]:
        if self._compacted:
            self._compacted = False
            return [Passthrough()]  # the `compacted` line just said it
        return [Compaction(compaction_id=f"compaction@{self._n}", status="completed")]

    # older per-tool events (begin/end pairs)

    def _exec_begin(self, event: _Event) -> list[Item]:
        call_id = event.call_id or f"call@{self._n}"
        if call_id in self.calls:
            return [Passthrough()]
        command = event.command or []
        return self._start(ci.command_started(call_id, command, None), _Command(command=command))

    def _exec_end(self, event: _Event) -> list[Item]:
        call_id = event.call_id or ""
        call = self.calls.get(call_id)
        if call is None or not isinstance(call.note, _Command):
            return [Passthrough()]
        note = call.note
        output = event.aggregated_output if event.aggregated_output is not None else event.stdout
        status = "completed" if event.exit_code == 0 else "failed"
        # the title the call started with (the same command's): not quoted again
        return list(
            ci.command_finished(
                call_id,
                note.command,
                note.cwd,
                status,
                output,
                event.exit_code,
                output_streamed=False,
                title=call.title,
            )
        )

    def _patch_begin(self, event: _Event) -> list[Item]:
        call_id = event.call_id or f"call@{self._n}"
        changes = [_change(path, _path_change(raw)) for path, raw in (event.changes or {}).items()]
        call = self.calls.get(call_id)
        if call is not None:  # the custom_tool_call started it: now the diffs are known
            if not isinstance(call.note, _Patch):
                return list(ci.file_diffs(call_id, changes, set()))
            call.note.changes = changes
            return list(ci.file_diffs(call_id, changes, call.note.seen))
        note = _Patch(changes)
        started, *diffs = ci.file_change_started(call_id, changes, note.seen)
        assert isinstance(started, ToolCall)
        return self._start(started, note, *diffs)

    def _patch_end(self, event: _Event) -> list[Item]:
        call_id = event.call_id or ""
        note = _note(self.calls.get(call_id))
        if not isinstance(note, _Patch):
            return [Passthrough()]
        if event.changes:
            # 0.142 writes no patch_apply_begin: the end's changes are the first to carry
            # the diffs (the call's start read only the paths of the patch's headers)
            ended = [_change(path, _path_change(raw)) for path, raw in event.changes.items()]
            note.changes = _merged_changes(note.changes, ended)
        status = "completed" if event.success else "failed"
        return list(ci.file_change_finished(call_id, note.changes, status, note.seen))

    def _mcp_begin(self, event: _Event) -> list[Item]:
        call_id = event.call_id or f"call@{self._n}"
        if call_id in self.calls:
            return [Passthrough()]
        inv = event.invocation or _Invocation()
        return _mcp_start(call_id, inv.server, inv.tool, ci.raw_or_none(inv.arguments))

    def _mcp_end(self, event: _Event) -> list[Item]:
        call_id = event.call_id or ""
        mcp = _note(self.calls.get(call_id))
        if not isinstance(mcp, McpTool):
            return [Passthrough()]
        result = _any_decoder.decode(event.result)
        if isinstance(result, dict) and "Err" in result:
            return list(ci.mcp_finished(call_id, mcp.server, mcp.tool, mcp.arguments, "failed", None, result["Err"]))
        ok = result.get("Ok") if isinstance(result, dict) and "Ok" in result else result
        return list(ci.mcp_finished(call_id, mcp.server, mcp.tool, mcp.arguments, "completed", ok, None))

    def _web_search_end(self, event: _Event) -> list[Item]:
        call_id = event.call_id or f"ws@{self._n}"
        if call_id in self._searches:
            return [Passthrough()]
        self._searches.add(call_id)
        return [ci.web_search_finished(call_id, event.query)]

    # -------------------------------------------- item_completed (0.169 core items)

    def _item_completed(self, event: _Event) -> list[Item]:
        item = event.item
        if item is None:
            return [Passthrough()]
        handler = self._core_items.get(item.type)
        if handler is None:
            return [Passthrough(method=f"event_msg:item_completed:{item.type}")]
        return handler(item)

    def _sub_agent_activity(self, event: _Event) -> list[Item]:
        """0.142's event of what 0.171 stores as a ``SubAgentActivity`` item (id: the
        spawning call's, ``event_id``)."""
        item = _CoreItem(
            type="SubAgentActivity",
            id=event.event_id or "",
            kind=event.kind,
            agent_thread_id=event.agent_thread_id,
            agent_path=event.agent_path,
        )
        return self._core_subagent(item)

    def _core_subagent(self, item: _CoreItem) -> list[Item]:
        """A sub-agent thread started or ended (its events are in its own rollout file,
        whose ``session_meta`` names this thread as its parent)."""
        thread, label = item.agent_thread_id or "", item.agent_path
        phase: Literal["started", "completed", "cancelled"]
        if item.kind == "started":
            self._subagents[thread] = item.id
            call: str | None = item.id
            phase = "started"
        elif item.kind in ("completed", "interrupted"):
            phase = "completed" if item.kind == "completed" else "cancelled"
            if thread in self._subagents:
                call = self._subagents.pop(thread)
            elif thread in self._ended_subagents:
                # the end of a later run (a follow-up): the sub-agent ran again; its end is
                # the subagent's alone
                return [
                    Subagent(subagent_id=thread, phase="resumed"),
                    Subagent(subagent_id=thread, phase=phase, name=label, model=item.model),
                ]
            else:
                call = None
            self._ended_subagents.add(thread)
        else:
            call = self._subagents.get(thread)
            return [Subagent(subagent_id=thread, phase="progress", name=label, activity=item.kind, call_id=call)]
        return list(ci.collab_subagent(thread, phase, call, label, model=item.model))

    def _core_user(self, item: _CoreItem) -> list[Item]:
        return [ci.user_message(item.id, [p.text or "" for p in item.content or () if p.type == "text"])]

    def _core_agent(self, item: _CoreItem) -> list[Item]:
        self._reply_due = False
        return [ci.agent_message(item.id, _texts(item.content, ("Text", "text")))]

    def _core_reasoning(self, item: _CoreItem) -> list[Item]:
        return [ci.reasoning(item.id, item.summary_text or (), item.raw_content or ())]

    def _core_command(self, item: _CoreItem) -> list[Item]:
        if ci.phase_of(item.status) == "started":
            return [Passthrough()]
        # the call started with the model's `cmd` ("ls"); the item has the argv that ran
        # (["/bin/bash", "-lc", "ls"]): the call keeps the title it started with
        known = self.calls.get(item.id)
        title = known.title if known is not None else None
        cwd = item.cwd[len("file://") :] if item.cwd and item.cwd.startswith("file://") else item.cwd
        return list(
            ci.command_finished(
                item.id,
                item.command or "",
                cwd,
                item.status,
                item.aggregated_output,
                item.exit_code,
                output_streamed=False,
                title=title,
            )
        )

    def _core_file_change(self, item: _CoreItem) -> list[Item]:
        if ci.phase_of(item.status) == "started":
            return [Passthrough()]
        note = _note(self.calls.get(item.id))
        changes = [_change(path, change) for path, change in (item.changes or {}).items()]
        seen = note.seen if isinstance(note, _Patch) else set()
        return list(ci.file_change_finished(item.id, changes, item.status, seen))

    def _core_mcp(self, item: _CoreItem) -> list[Item]:
        if ci.phase_of(item.status) == "started":
            return [Passthrough()]
        return list(
            ci.mcp_finished(
                item.id,
                item.server or "",
                item.tool or "",
                ci.raw_or_none(item.arguments),
                item.status,
                ci.raw_or_none(item.result),
                ci.raw_or_none(item.error),
                None if item.duration is None else item.duration.secs * 1000 + item.duration.nanos / 1e6,
            )
        )

    def _core_web_search(self, item: _CoreItem) -> list[Item]:
        self._searches.add(item.id)
        return [ci.web_search_finished(item.id, item.query)]

    def _core_compaction(self, item: _CoreItem) -> list[Item]:
        return [ci.compaction(item.id, "completed")]


# ------------------------------------------------ what a call's end repeats
#
# The core keeps the table of open calls (``self.calls``); each start attaches as its note
# what the call's end must repeat and the end's own line does not say.


class _Patch:
    """The note of a patch: its changes (their diffs come with ``patch_apply_begin``) and
    the diffs already reported."""

    __slots__ = ("changes", "seen")

    def __init__(self, changes: list[ci.Change]) -> None:
        self.changes = changes
        self.seen: set[tuple[str, str]] = set()


# An MCP call's note is its started ``mcp-tool`` (server, tool, arguments); another call's
# its started ``tool-call`` (the end repeats its input).


def _note(call: OpenCall | None) -> Any:
    return call.note if call is not None else None


def _mcp_start(call_id: str, server: str, tool: str, args: Any) -> list[Item]:
    started, mcp = ci.mcp_started(call_id, server, tool, args)
    return [Emit(body=started, note=mcp), mcp]


_PATCH_HEADERS: Final = {"*** Add File: ": "add", "*** Update File: ": "update", "*** Delete File: ": "delete"}


def _patch_changes(patch: str, cwd: str | None) -> list[ci.Change]:
    """The files an ``apply_patch`` input names (paths made absolute against ``cwd``)."""
    changes: list[ci.Change] = []
    for line in patch.splitlines():
        if not line.startswith("*** "):  # a line of a file's hunks (most are): no header
            continue
        for header, kind in _PATCH_HEADERS.items():
            if line.startswith(header):
                path = line[len(header) :].strip()
                if cwd and not path.startswith("/"):
                    path = f"{cwd.rstrip('/')}/{path}"
                changes.append(ci.Change(path=path, kind=kind))
        if line.startswith("*** Move to: ") and changes:
            changes[-1] = structs.replace(changes[-1], move_path=line[len("*** Move to: ") :].strip())
    return changes


#: The collab tools (0.96) whose output says a spawn or a sub-agent's end.
_COLLAB_OUTPUTS: Final = frozenset({"spawn_agent", "wait"})

_PATCH_COMMANDS: Final = ("apply_patch", "applypatch")
_SHELLS: Final = ("bash", "sh", "zsh")
#: ``[cd <dir> &&] apply_patch <<['"]EOF['"]``, the first line of a heredoc invocation
_HEREDOC: Final = re.compile(
    r"""(?:cd\s+(?P<cd>\S+)\s+&&\s+)?(?:apply_patch|applypatch)\s+<<-?\s*(?P<q>['"]?)(?P<end>\w+)(?P=q)\s*"""
)


def _patch_invocation(command: str | list[Any]) -> tuple[str, str | None] | None:
    """The patch (and the folder a ``cd`` names) of a command Codex runs as ``apply_patch``
    itself: ``["apply_patch", patch]``, or an ``apply_patch`` heredoc, alone or as the
    script of ``bash -lc`` (the shapes Codex recognizes; None for any other command)."""
    if isinstance(command, list):
        if len(command) == 2 and command[0] in _PATCH_COMMANDS and isinstance(command[1], str):
            return command[1], None
        shell = command[0].rsplit("/", 1)[-1] if command and isinstance(command[0], str) else ""
        if len(command) == 3 and shell in _SHELLS and command[1] in ("-lc", "-c") and isinstance(command[2], str):
            return _heredoc_patch(command[2])
        return None
    return _heredoc_patch(command)


def _heredoc_patch(script: str) -> tuple[str, str | None] | None:
    if "apply_patch" not in script and "applypatch" not in script:
        return None  # (most commands: no copy of the script, no match tried)
    first, _, rest = script.strip().partition("\n")
    m = _HEREDOC.fullmatch(first.strip())
    if m is None:
        return None
    body = rest.split("\n")
    stripped = [line.strip() for line in body]
    if m["end"] not in stripped:
        return None
    return "\n".join(body[: stripped.index(m["end"])]), m["cd"]


def _joined(cwd: str | None, cd: str | None) -> str | None:
    if cd is None or cd.startswith("/"):
        return cd or cwd
    return f"{cwd.rstrip('/')}/{cd}" if cwd else None


def _merged_changes(known: list[ci.Change], told: list[ci.Change]) -> list[ci.Change]:
    """``known`` (in its order) with each file ``told`` about replaced by what it says,
    then the files only ``told`` names."""
    by_path = {c.path: c for c in told}
    merged = [by_path.pop(c.path, c) for c in known]
    return merged + list(by_path.values())


_CHANGE_KINDS: Final = frozenset({"add", "delete", "update"})


def _path_change(raw: Raw) -> _PathChange:
    """One file of a patch event's ``changes``: ``{"type": "add", "content": ...}``, or, up to
    0.40, the kind as the key (``{"add": {"content"}}``, ``{"update": {"unified_diff",
    "move_path"}}``, ``{"delete": {"content"}}``, or ``"delete"`` alone in the oldest)."""
    value = _any_decoder.decode(raw)
    if isinstance(value, str) and value in _CHANGE_KINDS:
        return _PathChange(type=value)
    if isinstance(value, dict) and "type" not in value and len(value) == 1:
        ((kind, fields),) = value.items()
        if kind in _CHANGE_KINDS and isinstance(fields, dict):
            return msgspec.convert({**fields, "type": kind}, _PathChange)
    return msgspec.convert(value, _PathChange)


def _change(path: str, change: _PathChange) -> ci.Change:
    diff = change.unified_diff if change.unified_diff is not None else change.content
    return ci.Change(path=path, kind=change.type or "update", diff=diff, move_path=change.move_path)


def _instructions(text: str) -> ContextUpdated:
    return ContextUpdated(
        session_id="",
        applied=[ContextApplied(what="instructions", action="added", name="base_instructions", detail=text)],
    )
