"""The `gemini-chat` adapter: Gemini CLI's stored chats, read back as a replay.

``~/.gemini/tmp/<project>/chats/session-<local time>-<first 8 of the id>.jsonl``
(``stored = True``: every event has ``origin: "replay"``).

Facts (Gemini CLI 0.61.0, captures in adapters/gemini-chat/captures/gemini-cli-0.61.0):

* The first line is a header ``{sessionId, projectHash, startTime, lastUpdated, kind:
  "main"}``.  Then *records* ``{id, timestamp, type, content, ...}`` and *updates*
  ``{"$set": {...}}`` (``lastUpdated`` after each record; ``messages``, the whole
  conversation as the model is sent it, at the start and after a resume or a failure).
* A record is written again, whole, when it changes: the model's message is first
  written without its calls, then with ``toolCalls`` (same ``id``) once they ran.
* ``type: "user"`` records are the prompt (``content: [{text}]``) or the tool results
  sent back to the model (``[{functionResponse}]``).  The injected ``<session_context>``
  is only in ``$set.messages``, never a record.
* ``type: "gemini"`` records: ``content`` (the text, ``""`` when the model only called
  tools), ``thoughts`` (``[{subject, description, timestamp}]``, one per streamed thought
  piece, the ``**subject**`` parsed out), ``tokens {input, output, cached, thoughts, tool,
  total}`` of that model request, ``model``, ``toolCalls [{id, name, args, result, status:
  success|error, resultDisplay, description, displayName}]``.  ``resultDisplay`` is what
  the user was shown: a shell's output, a denial's message, an edit's ``{fileDiff,
  filePath, isNewFile, ...}``; in 0.38 and 0.41 a shell's output is the terminal's screen, lines of
  styled pieces (``[[{text, bold, inverse, ...}]]``), read as their text.
* No record ends a turn, and an API error is never stored: the failed prompt's record
  is withdrawn by a ``$set.messages`` that leaves it out (so does 0.56.0).  0.51.0 and
  0.45.2 (same layout otherwise) do not withdraw it: the prompt stays unanswered, as in the ``.json`` chats below;
  nor does 0.41.2, which also writes no ``<session_context>`` ``$set`` nor ``functionResponse`` records.
* ``--resume`` appends to the same file: a second header (same ``sessionId``), then
  ``$set`` lines restating the conversation so far.

Before 0.39 (captures gemini-cli-0.38.2, 0.31.0, 0.25.0, 0.20.0, 0.11.3): ``session-<time>-<id8>.json``, one
pretty-printed document ``{sessionId, projectHash, startTime, lastUpdated, messages: [...]}``
rewritten whole on each change, which the reader gives as the header (its fields but
``messages``), then one record per message (``normalize._lines``).  So: no ``$set``, each
message once in its last state, no ``functionResponse`` records (the results are in
``toolCalls[].result``), a resumed session rewritten in place (no second header).  The header
has ``kind`` in 0.31 and 0.38 only (detection takes ``projectHash`` instead); in 0.25, 0.20 and 0.11 a
user message's ``content`` is a string; in 0.20 and 0.11 an edit's call has no ``resultDisplay`` (no diff).
A failed request's prompt stays
in the file, unanswered: its turn ends with the file, ``ok``, as the chat gives no sign.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Final, Literal

import msgspec

from normalize import (
    AssistantMessage,
    CommandOutput,
    Direction,
    Emit,
    FileDiff,
    Item,
    MalformedMessage,
    ModeUpdate,
    Passthrough,
    PermissionAuto,
    Reasoning,
    Sample,
    SessionCreated,
    SessionRecord,
    Source,
    ToolCall,
    ToolCallRef,
    TurnComplete,
    TurnStart,
    Usage,
    UserMessage,
)
from normalize import Warning as WarningBody
from normalize.adapters import _gemini_common as gc
from normalize.adapters._limits import OPEN_ITEMS, Bounded

from ._base import BuiltinAdapter
from ._gemini_chat_views import (
    _Call,
    _decoder,
    _Line,
    _Part,
    _Set,
    _Thought,
)

__all__ = ["GeminiChatAdapter"]


#: frozen: one serves every update line
_SET_SOURCE: Final = Source(method="$set")
_KEPT: Final = Passthrough()

RECORD_TYPES = frozenset({"user", "gemini", "info", "warning", "error"})


def _text(content: list[_Part] | str | None) -> str | None:
    """A record's text (None: no text part, e.g. tool results sent back)."""
    if isinstance(content, str):
        return content
    texts = [p.text for p in content or () if p.text is not None]
    return "\n".join(texts) if texts else None


def _thoughts(thoughts: Sequence[_Thought]) -> str:
    return " ".join(f"**{t.subject}** {t.description}".strip() if t.subject else t.description for t in thoughts)


class GeminiChatAdapter(BuiltinAdapter):
    protocol = "gemini-chat"
    agent = "gemini-cli"
    stored = True
    default_paths = ("~/.gemini/tmp",)
    announces_session = True

    #: record type -> its handler, which appends to the line's list (its Source first)
    _RECORDS: ClassVar[dict[str, Callable[[GeminiChatAdapter, _Line, list[Item]], None]]]

    def __init__(self) -> None:
        super().__init__()
        self._session: str | None = None
        #: per model message: its text and the ids of the calls already given
        self._seen: Bounded[str, tuple[str, frozenset[str]]] = Bounded("message", OPEN_ITEMS)
        #: the open turn's prompt record id ("" when the turn has no prompt record)
        self._turn: str | None = None
        self._answered = False  # the open turn has a model message
        self._model: str | None = None  # the model of the last model message

    @classmethod
    def detect(cls, sample: Sequence[Sample]) -> float:
        if not sample:
            return 0.0
        try:
            first = _decoder.decode(sample[0][0])
        except msgspec.DecodeError:
            return 0.0
        if first.sessionId is None or first.startTime is None or first.type is not None:
            return 0.0
        # the header: 0.39 on names a ``kind``; a ``.json`` chat's fields (before 0.39) hash the project
        return 0.95 if first.kind is not None or first.projectHash is not None else 0.0

    def feed(self, message: bytes, from_: Direction = "agent") -> list[Item]:
        self._check_open()
        try:
            line = _decoder.decode(message)
        except msgspec.DecodeError as exc:
            raise MalformedMessage(f"not a gemini chat line: {exc}") from None
        if line.set is not None:
            return [_SET_SOURCE, self._update(line.set)]
        if line.sessionId is not None and line.type is None:
            return self._header(line)
        method = line.type or "unknown"
        handler = self._RECORDS.get(method)
        if handler is None:
            return [Passthrough(method=method)]
        out: list[Item] = [Source(method=method, ts=line.timestamp)]
        handler(self, line, out)
        return out

    def close(self) -> list[Item]:
        self._closed = True
        # the chat never says a turn ended: the last one ends with the file
        return [Emit(body=TurnComplete(reason="ok"), synthetic=True)] if self._turn is not None else []

    # ------------------------------------------------------------ lines

    def _header(self, line: _Line) -> list[Item]:
        out: list[Item] = [*self._end_turn(), Source(method="header", ts=line.startTime)]
        if self._session is None:
            self._session = line.sessionId
            record = SessionRecord(
                id="", agent="", protocol="", native_session_id=line.sessionId, created_at=line.startTime
            )
            return [SessionCreated(session_id="", record=record), *out]
        return [*out, Passthrough(method="header")]  # a resume appends to the same file

    def _end_turn(self) -> list[Item]:
        if self._turn is None:
            return []
        self._turn = None
        return [TurnComplete(reason="ok")]

    def _update(self, update: _Set) -> Item:
        if update.messages is None or not self._turn or self._answered:
            return _KEPT
        if any(m.id == self._turn for m in update.messages):
            return _KEPT
        # the prompt was withdrawn: its request failed, and the chat keeps no trace of why
        self._turn = None
        return TurnComplete(reason="interrupt", stop_reason="withdrawn")

    def _notice(self, line: _Line, out: list[Item]) -> None:
        out.append(WarningBody(message=_text(line.content) or "", source="gemini-cli"))

    def _user(self, line: _Line, out: list[Item]) -> None:
        text = _text(line.content)
        if text is None:
            out.append(Passthrough(method="user:functionResponse"))  # tool results sent back to the model
            return
        out += self._end_turn()
        self._turn, self._answered = line.id or "", False
        out.append(TurnStart())
        out.append(UserMessage(message_id=line.id or "", text=text))

    def _gemini(self, line: _Line, out: list[Item]) -> None:
        message_id = line.id or ""
        given = len(out)
        if self._turn is None:  # a model message without a prompt record
            self._turn = ""
            out.append(TurnStart())
        self._answered = True
        if line.model and line.model != self._model:  # the router may pick another model per request
            self._model = line.model
            out.append(ModeUpdate(model=line.model))
        seen = self._seen.get(message_id)
        if seen is None:
            if line.thoughts:
                out.append(Reasoning(reasoning_id=message_id, redacted=False, text=_thoughts(line.thoughts)))
            if line.content:
                out.append(AssistantMessage(message_id=message_id, text=_text(line.content) or ""))
            if line.tokens is not None:
                t = line.tokens
                tokens = gc.tokens(input=t.input, output=t.output, cached=t.cached, total=t.total, thoughts=t.thoughts)
                out.append(Usage(tokens=tokens, scope="call"))
        calls = seen[1] if seen is not None else frozenset()
        ids = [c.id for c in line.toolCalls or ()]
        for call in line.toolCalls or ():
            if call.id not in calls:
                out.extend(self._call(call))
        if seen is None or not calls.issuperset(ids):  # (a known message with no new call: kept as it is)
            self._seen[message_id] = (seen[0] if seen else "", calls.union(ids))
        if len(out) == given:
            out.append(Passthrough(method="gemini:rewritten"))

    def _call(self, call: _Call) -> list[Item]:
        """A stored call is written once it ran: its start and its end."""
        category = gc.category_of(call.name)
        title = gc.title_of(call.name, call.args)
        started = ToolCall(
            call_id=call.id, tool=call.name, phase="started", title=title, category=category, input=call.args
        )
        failed = call.status != "success"
        display = call.resultDisplay
        if isinstance(display, list):
            display = _screen_text(display) if display else display
        out: list[Item] = [started]
        if call.name == gc.SHELL_TOOL and not failed and isinstance(display, str) and display:
            out.append(CommandOutput(call_id=call.id, stream="merged", delta=display))
        if isinstance(display, dict) and isinstance(display.get("fileDiff"), str):
            path = display.get("filePath") or display.get("fileName") or ""
            kind = "add" if display.get("isNewFile") else "update"
            out.append(FileDiff(path=str(path), diff=display["fileDiff"], call_id=call.id, change_kind=kind))
            display = display.get("fileDiff")
        output: Any = {"error": display} if failed else display
        if failed and isinstance(display, str) and gc.refused_by_rule(display):
            # the user's rules refused it without asking: decided, as the stream says it
            ref = ToolCallRef(call_id=call.id, tool=call.name, title=title, category=category)
            out.append(PermissionAuto(tool_call=ref, option_id="deny", reason=display))
        phase: Literal["completed", "failed"] = "failed" if failed else "completed"
        out.append(
            ToolCall(call_id=call.id, tool=call.name, phase=phase, title=title, category=category, output=output)
        )
        return out


def _screen_text(display: list[Any]) -> Any:
    """A shell's output kept as the terminal showed it (0.38: a list of lines, each a list of
    styled pieces ``{text, bold, inverse, ...}``): its text, each line's trailing padding and
    the blank lines after the last dropped.  Any other list is given back as it is."""
    lines: list[str] = []
    for line in display:
        if not isinstance(line, list) or not all(isinstance(p, dict) and isinstance(p.get("text"), str) for p in line):
            return display
        lines.append("".join(p["text"] for p in line).rstrip())
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


GeminiChatAdapter._RECORDS = {
    "user": GeminiChatAdapter._user,
    "gemini": GeminiChatAdapter._gemini,
    "info": GeminiChatAdapter._notice,
    "warning": GeminiChatAdapter._notice,
    "error": GeminiChatAdapter._notice,
}
