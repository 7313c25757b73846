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
  ``"Reconnecting... "`` (``"Re-connecting... "`` up to 0.5x); the fatal one is repeated by
  ``turn.failed``.
* After Ctrl-C stdout just stops: no ``turn.failed``, no ``turn.completed``.
* No approvals (the policy is forced to ``never``), no token usage per request.

The older shape (codex-cli up to 0.4x; captures in codex-0.40.0 and older): a config line
(``{"model", "provider", "workdir", "approval", "sandbox", "reasoning effort", ...}``), a
prompt line ``{"prompt": ...}``, then ``{"id": "<submission>", "msg": <event>}`` lines
whose ``msg`` is Codex's core event, the same ``EventMsg`` that rollout files store as
``event_msg`` payloads (``task_started``, ``agent_reasoning``, ``exec_command_begin`` /
``exec_command_end``, ``patch_apply_begin`` / ``patch_apply_end``, ``token_count``,
``agent_message``, ``turn_diff``, ``error``, ...).  Those events are translated by the
rollout adapter's own rules (see ``_Legacy``).  Such a stream has no ``task_complete``
(and no thread id): its turn ends by the rules of ``_Legacy``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

import msgspec
from msgspec import Raw, structs

from normalize import (
    Body,
    Direction,
    Emit,
    Error,
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
from normalize.adapters._codex_rollout_views import Event
from normalize.adapters._limits import OPEN_ITEMS, Bounded, link, outbox
from normalize.adapters.codex_rollout import CodexRolloutAdapter

from ._base import BuiltinAdapter
from ._codex_exec_json_views import (
    _any_decoder,
    _AnyLine,
    _decoder,
    _head_decoder,
    _Item,
    _old_decoder,
    _old_msg_decoder,
    _OldLine,
    _OldMsg,
)

__all__ = ["CodexExecJsonAdapter"]

#: The prefixes of a retry notice (a transient error the turn survives): "Reconnecting...",
#: spelt "Re-connecting..." up to 0.5x.
RETRY_PREFIXES: Final = ("Reconnecting...", "Re-connecting...")


#: keys of the older shape's config line (codex-cli 0.40)
CONFIG_KEYS: Final = frozenset({"model", "provider", "workdir", "approval", "sandbox", "reasoning effort"})

#: Every top-level ``type`` of the stream (for detection).
LINE_TYPES: Final = frozenset(
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
#: The Source of each line type, made once: a Source is immutable, one serves every line.
_SOURCES: Final[dict[str | None, Source]] = {t: Source(method=t) for t in LINE_TYPES}
_PHASES: Final[dict[str | None, _Phase]] = {
    "item.started": "started",
    "item.updated": "updated",
    "item.completed": "completed",
}


class CodexExecJsonAdapter(BuiltinAdapter):
    protocol = "codex-exec-json"
    announces_session = True
    agent = "codex"

    def __init__(self) -> None:
        super().__init__()
        #: the older shape's translation, once a line of it is read
        self._legacy: _Legacy | None = None
        #: the last plan each todo_list item showed (its completion repeats it)
        self._plans: Bounded[str, list[PlanEntry]] = Bounded("plan", OPEN_ITEMS)
        #: the message of the last fatal ``error`` line of the open turn (turn.failed repeats it)
        self._last_error: str | None = None
        self._lines: dict[str, Callable[[_AnyLine], list[Item]]] = {
            "thread.started": self._thread_started,
            "turn.started": self._turn_started,
            "turn.completed": self._turn_completed,
            "turn.failed": self._turn_failed,
            "error": self._error,
            "item.started": self._item,
            "item.updated": self._item,
            "item.completed": self._item,
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
        first: neither may hide the stream.  Most JSON lines must be codex's.  The
        older shape (``{"id", "msg"}`` after a config and a prompt line) is
        recognised apart.
        """
        old = _Legacy.detect(sample)
        if old:
            return old
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

    def feed(self, message: bytes, from_: Direction = "agent") -> list[Item]:
        if self._closed:  # the check's call only when it raises: feed runs once per line
            self._check_open()
        try:
            line = _any_decoder.decode(message)
        except msgspec.DecodeError:
            return self._feed_checked(message)
        if line.type is not None:
            handler = self._lines.get(line.type)
            return handler(line) if handler is not None else [Passthrough(method=line.type)]
        if self._legacy is None:
            if message.lstrip().startswith(b'{"type"'):
                return self._feed_checked(message)  # "type": null, an error in _Line's words
            self._legacy = _Legacy(self)
        return self._legacy.feed(line)

    def _feed_checked(self, message: bytes) -> list[Item]:
        """A line ``_AnyLine`` could not take, read with the view of its shape.

        The shape is told as it always was: by the line's start until a line of the older
        shape is seen, by the older view's ``type`` after.
        """
        if self._legacy is not None or not message.lstrip().startswith(b'{"type"'):
            try:
                old = _old_decoder.decode(message)
            except msgspec.DecodeError as exc:
                raise MalformedMessage(f"not a codex exec --json line: {exc}") from None
            if old.type is None:
                if self._legacy is None:
                    self._legacy = _Legacy(self)
                return self._legacy.feed(old)
        try:
            line = _decoder.decode(message)
        except msgspec.DecodeError as exc:
            raise MalformedMessage(f"not a codex exec --json line: {exc}") from None
        handler = self._lines.get(line.type)
        return handler(_AnyLine(**structs.asdict(line))) if handler is not None else [Passthrough(method=line.type)]

    def close(self) -> list[Item]:
        self._closed = True
        if self._legacy is not None:
            return self._legacy.close()
        return []  # calls left open are settled by the core (docs/adapters.md)

    # ------------------------------------------------------------ line types
    #
    # Each returns the line's items whole: its Source first (after the SessionCreated that
    # thread.started gives: the record comes first), then its bodies.

    def _thread_started(self, line: _AnyLine) -> list[Item]:
        record = SessionRecord(id="", agent="", protocol="", native_session_id=line.thread_id)
        return [SessionCreated(session_id="", record=record), _SOURCES["thread.started"]]

    def _turn_started(self, line: _AnyLine) -> list[Item]:
        self._last_error = None
        return [_SOURCES["turn.started"], TurnStart()]

    def _turn_completed(self, line: _AnyLine) -> list[Item]:
        out: list[Item] = [_SOURCES["turn.completed"]]
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
        out.append(TurnComplete(reason="ok", stop_reason="completed"))
        return out

    def _turn_failed(self, line: _AnyLine) -> list[Item]:
        out: list[Item] = [_SOURCES["turn.failed"]]
        message = line.error.message if line.error is not None else ""
        if message and message != self._last_error:
            out.append(Error(message=message, error_type="turn-failed", recoverable=False))
        out.append(ci.failed_turn())
        self._last_error = None
        return out

    def _error(self, line: _AnyLine) -> list[Item]:
        message = line.message or ""
        # A retry notice: Codex retries the model request on its own; the turn goes on.
        retrying = message.startswith(RETRY_PREFIXES)
        if not retrying:
            self._last_error = message
        return [_SOURCES["error"], ci.error_notice(message, retrying=retrying)]

    # ------------------------------------------------------------ item types

    def _item(self, line: _AnyLine) -> list[Item]:
        item = line.item
        source = _SOURCES[line.type]
        if item is None:
            return [source, Passthrough(method=line.type)]
        handler = self._items.get(item.type)
        if handler is None:
            return [source, Passthrough(method=f"{line.type}:{item.type}")]
        return [source, *handler(item, _PHASES[line.type])]

    def _agent_message(self, item: _Item, phase: _Phase) -> list[Item]:
        if phase != "completed":
            return [Passthrough()]
        return [ci.agent_message(item.id, item.text or "")]

    def _reasoning(self, item: _Item, phase: _Phase) -> list[Item]:
        if phase != "completed":
            return [Passthrough()]
        # exec sends the summary only; the raw reasoning stays encrypted
        return [ci.reasoning(item.id, [item.text] if item.text else [])]

    def _command(self, item: _Item, phase: _Phase) -> list[Item]:
        command = item.command or ""
        if phase == "started":
            return [ci.command_started(item.id, command, None)]
        if phase == "updated":
            return [structs.replace(ci.command_started(item.id, command, None), phase="updated")]
        finished = ci.command_finished(
            item.id, command, None, item.status, item.aggregated_output, item.exit_code, output_streamed=False
        )
        return list(finished)

    def _file_change(self, item: _Item, phase: _Phase) -> list[Item]:
        # exec reports paths and kinds, never diffs: no file-diff bodies
        changes = [ci.Change(path=c.path, kind=c.kind or "update") for c in item.changes or ()]
        if phase == "completed":
            return [ci.patch_finished(item.id, changes, item.status)]
        started = ci.patch_started(item.id, changes)
        return [structs.replace(started, phase="updated") if phase == "updated" else started]

    def _mcp(self, item: _Item, phase: _Phase) -> list[Item]:
        args = ci.raw_or_none(item.arguments)
        if phase == "started":
            started, mcp = ci.mcp_started(item.id, item.server or "", item.tool or "", args)
            return [Emit(body=started, note=mcp), mcp]  # its mcp-tool: failed with it at the turn's end
        if phase == "updated":
            return [Passthrough()]
        error = {"message": item.error.message} if item.error is not None else None
        finished = ci.mcp_finished(
            item.id, item.server or "", item.tool or "", args, item.status, ci.raw_or_none(item.result), error
        )
        return list(finished)

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


#: The events whose rollout items hold a TurnStart (``_task_started``'s).
_TASK_STARTED: Final = frozenset({"task_started", "turn_started"})


class _Legacy:
    """The older ``codex exec --json`` shape, translated line by line.

    * The config line announces the session (model, working directory); there is no
      thread id in this shape.
    * The prompt line is the user's message and starts the turn; the ``task_started``
      that follows is the same start (it gives no second one).
    * Each ``msg`` goes through a rollout adapter as the ``event_msg`` it is, but
      ``stream_error``, a retry notice (a warning; the turn goes on).
    * Turn inference (no ``task_complete`` is printed): the end of the stream ends the turn
      ``ok`` when nothing is pending (no call without its end, and an ``agent_message``
      after the prompt and the last call), as failed after a terminal ``error``, and leaves
      it open otherwise (the Session reports it cut off).
    """

    def __init__(self, adapter: CodexExecJsonAdapter) -> None:
        self.rollout = CodexRolloutAdapter()
        # the calls the rollout rules start are the session's: they read its table
        self.rollout.calls = adapter.calls
        # and what its tables forget is reported as the outer adapter's tables' is
        link(self.rollout, outbox(adapter))
        self.announced = False
        self.turn_open = False
        self.reply_due = False
        self.failed: str | None = None

    @staticmethod
    def detect(sample: Sequence[Sample]) -> float:
        events = 0
        for data, _from in sample:
            try:
                old = _old_decoder.decode(data)
                keys = _any_keys(data)
            except msgspec.DecodeError:
                return 0.0
            if old.type is not None:
                return 0.0
            if bytes(old.msg) != b"null":
                events += 1
            elif old.prompt is None and not keys & CONFIG_KEYS:
                return 0.0
        return 0.9 if events else 0.0

    def feed(self, old: _AnyLine | _OldLine) -> list[Item]:
        msg = old.msg
        event: Event | _OldMsg | None = None
        payload: Event | Raw | None = msg  # what the rollout adapter reads: the event, decoded or not
        if isinstance(msg, Raw):  # _OldLine's, not decoded yet (a line _AnyLine could not take)
            if ci.present(msg):
                try:
                    event = _old_msg_decoder.decode(msg)
                except msgspec.DecodeError as exc:  # not an object, or a field of the wrong type
                    raise MalformedMessage(f"not a codex exec --json line: {exc}") from None
        else:
            event = msg
        out: list[Item] = []
        if not self.announced:
            self.announced = True
            record = SessionRecord(id="", agent="", protocol="", cwd=old.workdir, model=old.model)
            out.append(SessionCreated(session_id="", record=record))
        if event is not None and payload is not None:
            return self._event(out, event, payload)
        if old.prompt is not None:
            self.turn_open = self.reply_due = True
            return [*out, Source(method="prompt"), TurnStart(), ci.user_message("prompt", [old.prompt])]
        return [*out, Source(method="config"), Passthrough(method="config")]

    def _event(self, out: list[Item], msg: Event | _OldMsg, payload: Event | Raw) -> list[Item]:
        """``out`` and the items of a ``msg``: ``payload``, decoded or not, of which ``msg``
        is the type and message."""
        kind = msg.type
        if kind == "stream_error":  # a retry notice (rollout files never store one)
            out += (Source(method=kind), ci.error_notice(msg.message or "", retrying=True))
            return out
        # the rollout adapter's items for this event_msg, under the Source of this line
        out.append(Source(method=kind))
        items = self.rollout.feed_event(payload)
        if self.turn_open and kind in _TASK_STARTED:  # the prompt line started this turn
            items = [i for i in items if not isinstance(i, TurnStart)]
        out += items
        if kind == "task_started":
            self.turn_open = True
            if not any(isinstance(i, Body) for i in out):
                out.append(Passthrough())
        elif kind == "agent_message":
            self.reply_due = False
        elif kind.endswith("_end"):
            self.reply_due = True  # the model answers a tool's end
        elif kind == "error":
            self.failed = msg.message or ""
        elif kind in ("task_complete", "turn_aborted"):
            self.turn_open = False
        return out

    def close(self) -> list[Item]:
        pending = self.reply_due or bool(self.rollout.calls)
        out: list[Item] = []
        if self.turn_open and (self.failed is not None or not pending):
            ended = self.rollout._end_turn(None)  # the turn's usage; calls left open fail
            out.extend(Emit(body=b, synthetic=True) for b in ended if isinstance(b, Body))
            end = ci.failed_turn() if self.failed is not None else TurnComplete(reason="ok")
            out.append(Emit(body=end, synthetic=True))
            self.turn_open = False
        return out + self.rollout.close()


_keys_decoder: Final = msgspec.json.Decoder(dict[str, object])


def _any_keys(data: bytes) -> set[str]:
    try:
        return set(_keys_decoder.decode(data))
    except msgspec.ValidationError:
        return set()
