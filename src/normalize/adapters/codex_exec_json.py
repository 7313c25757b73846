"""The `codex-exec-json` adapter: `codex exec --json` (the ThreadEvent JSONL stream).

Facts (codex-cli 0.169.0, captures in adapters/codex-exec-json/captures/codex-0.169.0):

* One JSON object per line on stdout, snake_case, tagged by ``type`` with dots:
  ``thread.started {thread_id}`` (the only place the thread id appears),
  ``turn.started {}`` (no turn id anywhere), ``item.started|item.updated|item.completed
  {item}``, ``turn.completed {usage}``, ``turn.failed {error: {message}}``,
  ``error {message}``.
* Item ids are synthetic and sequential (``item_0``, ``item_1``, ...), restarting after
  ``exec resume``; they are not the model's call ids that app-server and rollout files use.
* ``agent_message`` and ``reasoning`` come only as ``item.completed`` (no started, no
  deltas). ``reasoning.text`` is the reasoning summary.
* ``web_search`` items write ``id`` twice (``{"id":"item_6","type":"web_search",
  "id":"ws_x6",...}``); the decoder keeps the last one, the model's ``ws_...`` id, which is
  also the id app-server and rollout files give the search.
* ``todo_list`` (the ``update_plan`` tool) is ``item.started`` with the first plan,
  ``item.updated`` for each new plan, and ``item.completed`` only at the turn's end,
  repeating the last plan.  Entries are ``{text, completed}``: no in-progress state.
* ``file_change`` items carry paths and kinds (``"add"|"delete"|"update"``, plain strings)
  but no diffs.
* ``turn.completed.usage`` is the turn's usage summed over its model requests:
  ``input_tokens, cached_input_tokens, cache_write_input_tokens, output_tokens,
  reasoning_output_tokens`` (the last two are new in 0.16x).
* A retry notice uses the same ``"type":"error"`` as a fatal error, its message starting
  ``"Reconnecting... "``; the fatal one is repeated by ``turn.failed``.
* After Ctrl-C stdout just stops: no ``turn.failed``, no ``turn.completed``.
* No approvals (the policy is forced to ``never``), no token usage per request.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec
from msgspec import Raw, Struct, structs

from normalize import (
    Adapter,
    Body,
    Direction,
    Error,
    FileDiff,
    Item,
    MalformedMessage,
    Passthrough,
    Plan,
    PlanEntry,
    Sample,
    SessionCreated,
    SessionRecord,
    Source,
    TurnComplete,
    TurnStart,
    Usage,
)
from normalize import Warning as WarningBody
from normalize.adapters import _codex_items as ci
from normalize.adapters._limits import OPEN_CALLS, OPEN_ITEMS, Bounded, bounded_feed

__all__ = ["CodexExecJsonAdapter"]

#: The prefix of a retry notice (a transient error the turn survives).
RETRY_PREFIX = "Reconnecting..."


# ---------------------------------------------------------------- wire views


class _Usage(Struct, frozen=True):
    input_tokens: int | None = None
    cached_input_tokens: int | None = None
    cache_write_input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_output_tokens: int | None = None


class _ErrorInfo(Struct, frozen=True):
    message: str = ""


class _Change(Struct, frozen=True):
    path: str
    kind: str | None = None


class _Todo(Struct, frozen=True):
    text: str
    completed: bool = False


class _Item(Struct, frozen=True):
    """Every item type's fields in one view; each handler reads its own."""

    id: str
    type: str
    text: str | None = None
    command: str | None = None
    aggregated_output: str | None = None
    exit_code: int | None = None
    status: str | None = None
    changes: list[_Change] | None = None
    server: str | None = None
    tool: str | None = None
    arguments: Raw = ci.NULL
    result: Raw = ci.NULL
    error: _ErrorInfo | None = None
    query: str | None = None
    action: Raw = ci.NULL
    items: list[_Todo] | None = None
    message: str | None = None


class _Line(Struct, frozen=True):
    type: str
    thread_id: str | None = None
    item: _Item | None = None
    usage: _Usage | None = None
    error: _ErrorInfo | None = None
    message: str | None = None


class _Head(Struct, frozen=True):
    type: str


_decoder = msgspec.json.Decoder(_Line)
_head_decoder = msgspec.json.Decoder(_Head)

#: Every top-level ``type`` of the stream (for detection).
LINE_TYPES = frozenset(
    {
        "thread.started",
        "turn.started",
        "turn.completed",
        "turn.failed",
        "item.started",
        "item.updated",
        "item.completed",
        "item.plan.delta",
        "request_user_input",
        "error",
    }
)

_Phase = str  # "started" | "updated" | "completed"


class CodexExecJsonAdapter(Adapter):
    protocol = "codex-exec-json"
    announces_session = True
    agent = "codex"

    def __init__(self) -> None:
        super().__init__()
        #: the last plan each todo_list item showed (its completion repeats it)
        self._plans: Bounded[str, list[PlanEntry]] = Bounded("plan", OPEN_ITEMS)
        #: the message of the last fatal ``error`` line of the open turn (turn.failed repeats it)
        self._last_error: str | None = None
        #: calls started and not finished: their started bodies
        self._open_calls: Bounded[str, list[Body]] = Bounded("tool call", OPEN_CALLS)
        self._lines: dict[str, Callable[[_Line], list[Item]]] = {
            "thread.started": self._thread_started,
            "turn.started": self._turn_started,
            "turn.completed": self._turn_completed,
            "turn.failed": self._turn_failed,
            "error": self._error,
            "item.started": lambda line: self._item(line, "started"),
            "item.updated": lambda line: self._item(line, "updated"),
            "item.completed": lambda line: self._item(line, "completed"),
        }
        self._items: dict[str, Callable[[_Item, _Phase], list[Item]]] = {
            "agent_message": self._agent_message,
            "reasoning": self._reasoning,
            "command_execution": self._command,
            "file_change": self._file_change,
            "mcp_tool_call": self._mcp,
            "web_search": self._web_search,
            "todo_list": self._todo_list,
            "error": self._item_error,
        }

    @classmethod
    def detect(cls, sample: Sequence[Sample]) -> float:
        """Scores the lines it recognises; an unknown type or a line that is not JSON is tolerated.

        A later codex release adds line types, and a wrapper may print a banner
        first: neither may hide the stream.  Most JSON lines must be codex's.
        """
        seen = other = 0
        first: str | None = None
        for data, _from in sample:
            try:
                head = _head_decoder.decode(data)
            except msgspec.DecodeError:
                other += 1
                continue
            if head.type not in LINE_TYPES:
                other += 1
                continue
            first = first or head.type
            seen += 1
        if not seen or seen < other:
            return 0.0
        return 0.95 if first == "thread.started" else 0.6

    # ------------------------------------------------------------------ feed

    @bounded_feed
    def feed(self, message: bytes, from_: Direction = "agent") -> list[Item]:
        self._check_open()
        try:
            line = _decoder.decode(message)
        except msgspec.DecodeError as exc:
            raise MalformedMessage(f"not a codex exec --json line: {exc}") from None
        handler = self._lines.get(line.type)
        if handler is None:
            return [Passthrough(method=line.type)]
        out = handler(line)
        # A SessionCreated must come first; the Source applies to the bodies after it.
        lead = [out.pop(0)] if out and isinstance(out[0], SessionCreated) else []
        return [*lead, Source(method=line.type), *out]

    def close(self) -> list[Item]:
        self._closed = True
        self._open_calls.clear()  # calls left open are settled by the core (docs/adapters.md)
        return []

    # ------------------------------------------------------------ line types

    def _thread_started(self, line: _Line) -> list[Item]:
        record = SessionRecord(id="", agent="", protocol="", native_session_id=line.thread_id)
        return [SessionCreated(session_id="", record=record)]

    def _turn_started(self, line: _Line) -> list[Item]:
        self._last_error = None
        return [TurnStart()]

    def _turn_completed(self, line: _Line) -> list[Item]:
        out: list[Item] = []
        if line.usage is not None:
            u = line.usage
            tokens = ci.tokens(
                input=u.input_tokens,
                output=u.output_tokens,
                cached=u.cached_input_tokens,
                cache_write=u.cache_write_input_tokens,
                reasoning=u.reasoning_output_tokens,
            )
            out.append(Usage(tokens=tokens, scope="turn"))
        out.extend(self._settle_open_calls())
        out.append(TurnComplete(reason="ok", stop_reason="completed"))
        return out

    def _turn_failed(self, line: _Line) -> list[Item]:
        out: list[Item] = []
        message = line.error.message if line.error is not None else ""
        if message and message != self._last_error:
            out.append(Error(message=message, error_type="turn-failed", recoverable=False))
        out.extend(self._settle_open_calls())
        out.append(ci.failed_turn())
        self._last_error = None
        return out

    def _error(self, line: _Line) -> list[Item]:
        message = line.message or ""
        # A retry notice: Codex retries the model request on its own; the turn goes on.
        retrying = message.startswith(RETRY_PREFIX)
        if not retrying:
            self._last_error = message
        return [ci.error_notice(message, retrying=retrying)]

    def _settle_open_calls(self) -> list[Item]:
        # Items still open when the turn ends never get their completion: they end failed.
        out: list[Item] = [structs.replace(b, phase="failed") for bodies in self._open_calls.values() for b in bodies]
        self._open_calls.clear()
        return out

    # ------------------------------------------------------------ item types

    def _item(self, line: _Line, phase: _Phase) -> list[Item]:
        item = line.item
        if item is None:
            return [Passthrough(method=line.type)]
        handler = self._items.get(item.type)
        if handler is None:
            return [Passthrough(method=f"{line.type}:{item.type}")]
        return handler(item, phase)

    def _agent_message(self, item: _Item, phase: _Phase) -> list[Item]:
        if phase != "completed":
            return [Passthrough()]
        return [ci.agent_message(item.id, item.text or "")]

    def _reasoning(self, item: _Item, phase: _Phase) -> list[Item]:
        if phase != "completed":
            return [Passthrough()]
        # exec sends the summary only; the raw reasoning stays encrypted
        return [ci.reasoning(item.id, [item.text] if item.text else [])]

    def _open(self, item: _Item, bodies: list[Body]) -> list[Item]:
        self._open_calls[item.id] = bodies
        return list(bodies)

    def _close(self, item: _Item, bodies: list[Body]) -> list[Item]:
        self._open_calls.pop(item.id, None)
        return list(bodies)

    def _command(self, item: _Item, phase: _Phase) -> list[Item]:
        command = item.command or ""
        if phase == "started":
            return self._open(item, [ci.command_started(item.id, command, None)])
        if phase == "updated":
            return [structs.replace(ci.command_started(item.id, command, None), phase="updated")]
        finished = ci.command_finished(
            item.id, command, None, item.status, item.aggregated_output, item.exit_code, output_streamed=False
        )
        return self._close(item, finished)

    def _file_change(self, item: _Item, phase: _Phase) -> list[Item]:
        # exec reports paths and kinds, never diffs: no file-diff bodies
        changes = [ci.Change(path=c.path, kind=c.kind or "update") for c in item.changes or ()]
        if phase == "completed":
            bodies = ci.file_change_finished(item.id, changes, item.status, set())
            return self._close(item, [b for b in bodies if not isinstance(b, FileDiff)])
        started = [b for b in ci.file_change_started(item.id, changes, set()) if not isinstance(b, FileDiff)]
        if phase == "updated":
            return [structs.replace(b, phase="updated") for b in started]
        return self._open(item, started)

    def _mcp(self, item: _Item, phase: _Phase) -> list[Item]:
        args = ci.raw_or_none(item.arguments)
        if phase == "started":
            return self._open(item, ci.mcp_started(item.id, item.server or "", item.tool or "", args))
        if phase == "updated":
            return [Passthrough()]
        error = {"message": item.error.message} if item.error is not None else None
        finished = ci.mcp_finished(
            item.id, item.server or "", item.tool or "", args, item.status, ci.raw_or_none(item.result), error
        )
        return self._close(item, finished)

    def _web_search(self, item: _Item, phase: _Phase) -> list[Item]:
        if phase == "started":
            return [ci.web_search_started(item.id, item.query)]
        if phase == "completed":
            return [ci.web_search_finished(item.id, item.query)]
        return [Passthrough()]

    def _todo_list(self, item: _Item, phase: _Phase) -> list[Item]:
        entries = [
            PlanEntry(content=t.text, status="completed" if t.completed else "pending") for t in item.items or []
        ]
        if phase == "completed":
            last = self._plans.pop(item.id, None)
            if last == entries:
                return [Passthrough()]  # the final repetition of the last plan
        else:
            self._plans[item.id] = entries
        return [Plan(entries=entries)]

    def _item_error(self, item: _Item, phase: _Phase) -> list[Item]:
        # A non-fatal problem Codex reports as an item ("Model metadata ... not found").
        return [WarningBody(message=item.message or item.text or "", source="codex")]
