"""The `opencode-db` adapter: OpenCode's stored sessions, read back as a replay.

OpenCode keeps its sessions in a SQLite database, ``~/.local/share/opencode/opencode.db``
(older releases: JSON files under ``storage/``, not read here).  :func:`session_ids` and
:func:`session_rows` read one session's rows from it, read-only, as JSON *row records*;
the adapter maps those records (``stored = True``: every event is ``origin: "replay"``).

A row record is one line: ``{"table": "session", ...columns}`` first, then per message
(oldest first) ``{"table": "message", "id", "session_id", "time_created",
"time_updated", "data": <the data column, verbatim>}`` followed by its parts
``{"table": "part", "id", "message_id", ...}`` (by id, which OpenCode makes
time-ordered).  Only the ``session``, ``message`` and ``part`` tables are read: never
``account``, ``control_account``, ``credential`` or ``session_share`` (tokens, secrets).

Facts (OpenCode 1.18.33, captures in adapters/opencode-db/captures/opencode-1.18.33):

* ``message.data`` is ``{role: user|assistant, time, agent, model...}``; an assistant
  message is one model request (``tokens``, ``cost``, ``finish``, ``error {name, data:
  {message}}`` when the request failed).  ``part.data`` is the part that ``opencode run
  --format json`` prints, without its ids (columns here).
* The prompt is a ``text`` part of the user message; ``opencode run`` stores it quoted
  (``"\\"the prompt\\""``).  Nothing marks the end of a turn but the last step's
  ``step-finish`` reason (``stop``) or the assistant message's ``error``.
* ``session`` has the title, ``directory``, ``version`` (OpenCode's), ``model`` (JSON
  text ``{id, providerID}``) and cumulative ``cost`` / ``tokens_*``.  Up to 1.14 the
  session row names no model (no column before 1.14, an empty one in 1.14): the messages
  do (``model.modelID`` on a user message, ``modelID`` on an assistant message), and
  normalize gives it as ``session-info`` where a message first names it (or names another).
* Times are epoch milliseconds.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec
from msgspec import Raw, Struct

from normalize import (
    Adapter,
    Direction,
    Error,
    Item,
    MalformedMessage,
    Passthrough,
    Sample,
    SessionCreated,
    SessionInfo,
    SessionRecord,
    Source,
    TurnComplete,
    TurnStart,
    UserMessage,
)
from normalize.adapters import _opencode_parts as op
from normalize.adapters._opencode_parts import error_message, iso_ms

__all__ = ["SQLITE_MAGIC", "OpenCodeDbAdapter", "is_opencode_db", "session_ids", "session_rows"]

SQLITE_MAGIC = b"SQLite format 3\x00"


# ---------------------------------------------------------------- reading the database

#: The session columns copied into the first record (no share URL, no permission rules).
_SESSION_COLUMNS = (
    "id",
    "project_id",
    "parent_id",
    "slug",
    "directory",
    "title",
    "version",
    "agent",
    "model",
    "cost",
    "tokens_input",
    "tokens_output",
    "tokens_reasoning",
    "tokens_cache_read",
    "tokens_cache_write",
    "time_created",
    "time_updated",
)


def _connect(path: Path) -> sqlite3.Connection:
    """A read-only connection (``mode=ro``: OpenCode may be writing to it)."""
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)


def is_opencode_db(path: Path) -> bool:
    """Whether ``path`` is a SQLite database with OpenCode's session tables."""
    try:
        with path.open("rb") as f:
            if f.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
                return False
        with contextlib.closing(_connect(path)) as db:
            names = {r[0] for r in db.execute("select name from sqlite_master where type = 'table'")}
    except (OSError, sqlite3.Error):
        return False
    return {"session", "message", "part"} <= names


def session_ids(path: Path) -> list[str]:
    """The sessions of an OpenCode database, oldest first."""
    with contextlib.closing(_connect(path)) as db:
        return [r[0] for r in db.execute("select id from session order by time_created, id")]


_enc = msgspec.json.Encoder()


def _row(table: str, cols: Sequence[str], values: Sequence[Any], data: str | None = None) -> bytes:
    head = _enc.encode({"table": table, **dict(zip(cols, values, strict=True))})
    if data is None:
        return head
    return head[:-1] + b',"data":' + data.encode() + b"}"  # the column's JSON, verbatim


def session_rows(path: Path, session_id: str) -> Iterator[bytes]:
    """One session's row records (see the module docstring), read-only."""
    with contextlib.closing(_connect(path)) as db:
        # the columns this database has: OpenCode added some over time (1.2 has no
        # agent, model, path nor cost; 1.14 no cost nor tokens), and a record leaves out
        # those it lacks, as it would their empty values
        have = {info[1] for info in db.execute("pragma table_info(session)")}
        names = tuple(name for name in _SESSION_COLUMNS if name in have)
        for values in db.execute(f"select {', '.join(names)} from session where id = ?", (session_id,)):
            yield _row("session", names, values)
        messages = db.execute(
            "select id, session_id, time_created, time_updated, data from message"
            " where session_id = ? order by time_created, id",
            (session_id,),
        ).fetchall()
        mcols = ("id", "session_id", "time_created", "time_updated")
        pcols = ("id", "message_id", "session_id", "time_created", "time_updated")
        for *mvalues, mdata in messages:
            yield _row("message", mcols, mvalues, mdata)
            for *pvalues, pdata in db.execute(
                "select id, message_id, session_id, time_created, time_updated, data from part"
                " where message_id = ? order by id",
                (mvalues[0],),
            ):
                yield _row("part", pcols, pvalues, pdata)


# ---------------------------------------------------------------- the adapter


class _ErrorData(Struct, frozen=True):
    message: str | None = None


class _MsgError(Struct, frozen=True):
    name: str | None = None
    data: _ErrorData | None = None


class _Message(Struct, frozen=True):
    role: str = ""
    error: _MsgError | None = None
    modelID: str | None = None  # an assistant message's model
    model: Any = None  # a user message's: {providerID, modelID}

    def model_id(self) -> str | None:
        if self.modelID:
            return self.modelID
        model = self.model.get("modelID") if isinstance(self.model, dict) else None
        return model if isinstance(model, str) and model else None


class _Model(Struct, frozen=True):
    id: str | None = None


class _Row(Struct, frozen=True):
    table: str
    id: str = ""
    time_created: int | None = None
    data: Raw = Raw(b"null")
    # session columns
    directory: str | None = None
    title: str | None = None
    version: str | None = None
    model: str | None = None
    parent_id: str | None = None


_decoder = msgspec.json.Decoder(_Row)
_message_decoder = msgspec.json.Decoder(_Message)
_part_decoder = msgspec.json.Decoder(op.Part)
_model_decoder = msgspec.json.Decoder(_Model)


class OpenCodeDbAdapter(Adapter):
    protocol = "opencode-db"
    agent = "opencode"
    stored = True
    default_paths = ("~/.local/share/opencode/opencode.db",)
    announces_session = True

    def __init__(self) -> None:
        super().__init__()
        self._in_turn = False
        self._user_message = False  # the parts being read belong to a user message
        #: the model said last, when the session row names none (OpenCode up to 1.14:
        #: no model column, or an empty one): its messages name it
        self._model: str | None = None
        self._model_from_messages = False

    @classmethod
    def detect(cls, sample: Sequence[Sample]) -> float:
        if not sample:
            return 0.0
        try:
            first = _decoder.decode(sample[0][0])
        except msgspec.DecodeError:
            return 0.0
        return 0.95 if first.table == "session" and first.version is not None else 0.0

    def feed(self, message: bytes, from_: Direction = "agent") -> list[Item]:
        self._check_open()
        try:
            row = _decoder.decode(message)
            if row.table == "message":
                return [Source(method="message", ts=iso_ms(row.time_created)), *self._message(row)]
            if row.table == "part":
                part = _part_decoder.decode(row.data)
                return [Source(method=f"part:{part.type}", ts=iso_ms(row.time_created)), *self._part(row.id, part)]
        except msgspec.DecodeError as exc:
            raise MalformedMessage(f"not an opencode row record: {exc}") from None
        if row.table == "session":
            return self._session(row)
        return [Passthrough(method=row.table)]

    def close(self) -> list[Item]:
        self._closed = True
        return []

    def _session(self, row: _Row) -> list[Item]:
        model = None
        if row.model:
            with contextlib.suppress(msgspec.DecodeError):
                model = _model_decoder.decode(row.model).id
        record = SessionRecord(
            id="",
            agent="",
            protocol="",
            native_session_id=row.id,
            title=row.title,
            cwd=row.directory,
            model=model,
            created_at=iso_ms(row.time_created),
            parent_id=row.parent_id,
            agent_version=row.version,
        )
        self._model_from_messages = model is None
        return [SessionCreated(session_id="", record=record), Source(method="session", ts=iso_ms(row.time_created))]

    def _message(self, row: _Row) -> list[Item]:
        msg = _message_decoder.decode(row.data)
        self._user_message = msg.role == "user"
        info: list[Item] = []
        model = msg.model_id() if self._model_from_messages else None
        if model is not None and model != self._model:  # the session row named no model
            self._model = model
            info.append(SessionInfo(model=model))
        if msg.role == "user":
            out: list[Item] = []
            if self._in_turn:  # the last turn never finished (no final step, no error)
                out.append(TurnComplete(reason="interrupt", stop_reason="unfinished"))
            self._in_turn = True
            return [*out, *info, TurnStart()]
        if msg.error is not None and self._in_turn:
            self._in_turn = False
            err = msg.error
            text = error_message(err.name, err.data.message if err.data else None)
            return [
                *info,
                Error(message=text, error_type=err.name or "error", recoverable=False),
                TurnComplete(reason="interrupt", stop_reason="error"),
            ]
        return info or [Passthrough()]

    def _part(self, part_id: str, part: op.Part) -> list[Item]:
        if self._user_message:
            if part.type == "text":
                return [UserMessage(message_id=part_id, text=part.text or "")]
            return [Passthrough()]
        bodies = op.part_bodies(part_id, part)
        if bodies is None:
            return [Passthrough()]
        if any(isinstance(b, TurnComplete) for b in bodies):
            self._in_turn = False
        return list(bodies)
