"""The `opencode-db` adapter: OpenCode's stored sessions, read back as a replay.

OpenCode keeps its sessions in a SQLite database, ``~/.local/share/opencode/opencode.db``
(1.0 and 1.1: JSON files under ``storage/``).  :func:`session_ids` and
:func:`session_rows` read one session's rows from it, read-only, as JSON *row records*;
:func:`storage_session_ids` and :func:`storage_session_rows` make the same records of a
``storage/`` folder's files; the adapter maps those records (``stored = True``: every event is ``origin: "replay"``).

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
import glob
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

__all__ = [
    "SQLITE_MAGIC",
    "OpenCodeDbAdapter",
    "is_opencode_db",
    "is_opencode_storage",
    "session_ids",
    "session_rows",
    "storage_session_ids",
    "storage_session_rows",
]

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


# ---------------------------------------------------------------- reading storage/ (1.0, 1.1)

# OpenCode 1.0 and 1.1 wrote ``~/.local/share/opencode/storage/``: ``session/<projectID>/
# <sessionID>.json`` (the session: id, slug, version, projectID, directory, title, parentID,
# time {created, updated}), ``message/<sessionID>/<messageID>.json`` (a message: the
# database's ``message.data`` plus ``id`` and ``sessionID``), ``part/<messageID>/<partID>.json``
# (a part: the database's ``part.data`` plus ``id``, ``sessionID``, ``messageID``), each one
# JSON object over several lines.  Message and part ids are ascending in time (session
# ids descending): a session's messages, and a message's parts, are read in id order.


def is_opencode_storage(path: Path) -> bool:
    """Whether ``path`` is OpenCode's ``storage/`` folder (a ``session`` and a ``message`` folder in it)."""
    return (path / "session").is_dir() and (path / "message").is_dir()


def _json_object(path: Path) -> dict[str, Any] | None:
    try:
        value = msgspec.json.decode(path.read_bytes())
    except (OSError, msgspec.DecodeError):
        return None
    return value if isinstance(value, dict) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _time(obj: dict[str, Any], *keys: str) -> int | None:
    time = obj.get("time")
    if not isinstance(time, dict):
        return None
    for key in keys:
        if (ms := _int(time.get(key))) is not None:
            return ms
    return None


def _session_files(root: Path) -> dict[str, Path]:
    return {f.stem: f for f in sorted((root / "session").glob("*/*.json")) if f.is_file()}


def storage_session_ids(root: Path) -> list[str]:
    """The sessions of a ``storage/`` folder, oldest first (by ``time.created``, then id)."""
    created: list[tuple[int, str]] = []
    for sid, f in _session_files(root).items():
        info = _json_object(f) or {}
        created.append((_time(info, "created") or 0, sid))
    return [sid for _, sid in sorted(created)]


def _verbatim(path: Path) -> str:
    """A file that is not a JSON object, as the text of a record's ``data`` (on one line):
    the record is then not JSON, and the adapter says so."""
    try:
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError as exc:
        text = f"<unreadable: {exc.strerror or exc}>"
    return " ".join(text.split()) or "<empty>"


def _stored(path: Path, ids: tuple[str, ...]) -> tuple[dict[str, Any] | None, str]:
    """A message or part file: its object, and its JSON without the ids (the database's ``data``)."""
    obj = _json_object(path)
    if obj is None:
        return None, _verbatim(path)
    return obj, _enc.encode({k: v for k, v in obj.items() if k not in ids}).decode()


def storage_session_rows(root: Path, session_id: str) -> Iterator[bytes]:
    """One session of a ``storage/`` folder as the row records its database would give."""
    # its own file, found by its name (listing every session's file for each would be quadratic)
    files = [f for f in sorted((root / "session").glob(f"*/{glob.escape(session_id)}.json")) if f.is_file()]
    session_file = files[-1] if files else None  # as _session_files keeps it
    info = (_json_object(session_file) if session_file is not None else None) or {}
    yield _row(
        "session",
        ("id", "project_id", "parent_id", "slug", "directory", "title", "version", "time_created", "time_updated"),
        (
            session_id,
            info.get("projectID"),
            info.get("parentID"),
            info.get("slug"),
            info.get("directory"),
            info.get("title"),
            info.get("version", ""),
            _time(info, "created"),
            _time(info, "updated"),
        ),
    )
    mcols = ("id", "session_id", "time_created", "time_updated")
    pcols = ("id", "message_id", "session_id", "time_created", "time_updated")
    for mfile in sorted((root / "message" / session_id).glob("*.json")):
        message, mdata = _stored(mfile, ("id", "sessionID"))
        mid = mfile.stem
        created = _time(message, "created") if message is not None else None
        updated = (_time(message, "completed", "updated") if message is not None else None) or created
        yield _row("message", mcols, (mid, session_id, created, updated), mdata)
        last = created  # a part's time: its span's start (text, reasoning), else where the last ended
        for pfile in sorted((root / "part" / mid).glob("*.json")):
            part, pdata = _stored(pfile, ("id", "sessionID", "messageID"))
            pcreated = (_time(part, "start") if part is not None else None) or last
            pupdated = (_time(part, "end") if part is not None else None) or pcreated
            last = pupdated
            yield _row("part", pcols, (pfile.stem, mid, session_id, pcreated, pupdated), pdata)


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
    default_paths = ("~/.local/share/opencode/opencode.db", "~/.local/share/opencode/storage")
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
