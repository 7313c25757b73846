"""The `opencode-json` adapter: ``opencode run --format json``.

Facts (OpenCode 1.18.33, captures in adapters/opencode-json/captures/opencode-1.18.33):

* One JSON object per line on stdout: ``{type, timestamp (epoch ms), sessionID, part}``
  with ``type`` ``step_start``, ``text``, ``reasoning`` (only with ``--thinking``),
  ``tool_use``, ``step_finish``, and ``error {error: {name, data: {message}}}``.  ``part``
  is the stored part, ids included (``prt_…``, ``messageID``, ``sessionID``).
* One process is one turn; the prompt is never printed.  A step is one model request
  (one assistant message); ``step_finish.part.reason`` is ``tool-calls`` when the model
  called tools and the turn goes on, ``stop`` when it is done.
* Parts are printed once finished: text and reasoning whole (no deltas), a tool call only
  once it ran (``state.status`` ``completed`` with ``output`` and ``metadata.exit``, or
  ``error`` with ``error``: a permission rule's denial is an error).
* A call to a tool OpenCode does not have comes back as the ``invalid`` tool.
* Token counts of ``step_finish``: ``input`` without cache reads and writes, ``output``
  without ``reasoning`` (with it up to OpenCode 1.3.2, ``total`` absent before 1.2); ``cost``
  in USD, computed by OpenCode.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import msgspec

from normalize import (
    Direction,
    Error,
    InTurn,
    Item,
    MalformedMessage,
    Passthrough,
    Sample,
    SessionCreated,
    SessionRecord,
    Source,
    TurnComplete,
)
from normalize.adapters import _opencode_parts as op
from normalize.adapters._opencode_parts import error_message
from normalize.adapters._times import ms_time

from ._base import BuiltinAdapter
from ._opencode_json_views import (
    _decoder,
    _Error,
    _head_decoder,
)

__all__ = ["OpenCodeJsonAdapter"]


#: frozen and empty: one serves every line
_IN_TURN: Final = InTurn()

LINE_TYPES: Final = frozenset({"step_start", "text", "reasoning", "tool_use", "step_finish", "error"})


class OpenCodeJsonAdapter(BuiltinAdapter):
    protocol = "opencode-json"
    agent = "opencode"
    announces_session = True

    def __init__(self) -> None:
        super().__init__()
        self._session: str | None = None

    @classmethod
    def detect(cls, sample: Sequence[Sample]) -> float:
        seen = 0
        for data, _from in sample:
            try:
                head = _head_decoder.decode(data)
            except msgspec.DecodeError:
                return 0.0
            if head.type not in LINE_TYPES or head.sessionID is None:
                return 0.0
            seen += 1
        return 0.95 if seen else 0.0

    def feed(self, message: bytes, from_: Direction = "agent") -> list[Item]:
        self._check_open()
        try:
            line = _decoder.decode(message)
        except msgspec.DecodeError as exc:
            raise MalformedMessage(f"not an opencode run --format json line: {exc}") from None
        out: list[Item] = []
        if self._session is None and line.sessionID is not None:
            self._session = line.sessionID
            record = SessionRecord(id="", agent="", protocol="", native_session_id=line.sessionID)
            out.append(SessionCreated(session_id="", record=record))
        if line.type not in LINE_TYPES:
            out.append(Passthrough(method=line.type))
            return out
        out.append(Source(method=line.type, ts=None if line.timestamp is None else ms_time(line.timestamp)))
        out.append(_IN_TURN)  # every line is part of a turn: the run prints no turn start
        if line.type == "error":
            err = line.error or _Error()
            text = error_message(err.name, err.data.message if err.data else None)
            out.append(Error(message=text, error_type=err.name or "error", recoverable=False))
            out.append(TurnComplete(reason="interrupt", stop_reason="error"))
            return out
        if line.part is not None:
            bodies = op.part_bodies(line.part.id or "", line.part)
            if bodies is not None:  # None: a step start, nothing but the turn start it may give
                out += bodies
        return out
