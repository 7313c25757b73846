"""The unit of work of an export, as two pure functions any engine can run.

* :func:`session_events`: one session input (a file found by
  :func:`~normalize.analytics.discover`, or the bytes of one file) -> its
  normalized events, streamed.
* :func:`record_batches`: events -> one Arrow record batch per analytics table,
  with the schema the export writes (:func:`arrow_schema`).

:func:`event_batch` gives the events themselves as one Arrow record batch
(envelope columns, the body as JSON, the native message as bytes), for an engine
that stores the normalized events next to the tables.

Neither keeps state between calls or writes anything: a Dask task, a Spark
``mapInArrow`` function or a plain loop calls them the same way, and the rows
are the ones ``normalize export`` writes for the same input.  Which copy of a
session to keep when several inputs hold it, and what is already stored, is the
writer's business (:mod:`._store`, :mod:`._dask`).
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from typing import Any

import msgspec

from normalize import InputError, SessionEvent, StreamHeader, decode, events, iter_records
from normalize._model import _Core
from normalize._outputs import is_normalized_head

from ._load import InputSpec, input_events, rows_of
from ._schema import TABLES
from ._store import _import_pyarrow, _ts, arrow_table
from ._tables import UNKNOWN_TS, unknown_clock

__all__ = [
    "EVENT_COLUMNS",
    "arrow_schema",
    "decode_lines",
    "event_batch",
    "is_normalized_head",
    "record_batches",
    "session_events",
]


def decode_lines(lines: Iterable[bytes], name: str) -> Iterator[_Core | StreamHeader]:
    """The events of a normalized stream's lines; a line that is not one raises with its ``name:LINE``."""
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield decode(line)
        except InputError as exc:
            raise InputError(f"{name}:{lineno}: {exc.message}") from None


def session_events(
    source: InputSpec | bytes, *, protocol: str | None = None, name: str = "<bytes>"
) -> Iterator[_Core | StreamHeader]:
    """The normalized events of one session input, streamed.

    ``source`` is an :class:`InputSpec` (a native session with its companion files,
    or a normalized stream file), or the content of one file: a normalized stream
    (first line a ``stream.header``) is decoded, anything else converted as a native
    session (``protocol`` detected when not given).  Native times the input lacks are
    marked unknown, as the export does.  Raises :class:`~normalize.InputError` for
    input that cannot be read as a session (``name`` says where in its message).
    """
    if isinstance(source, InputSpec):
        return input_events(source)
    if is_normalized_head(source):
        return decode_lines(source.splitlines(), name)
    return events(iter_records(io.BytesIO(source)), protocol=protocol, clock=unknown_clock)


def arrow_schema(table: str) -> Any:
    """The Arrow schema of one analytics table (``pyarrow.Schema``)."""
    return arrow_table(table, []).schema


def record_batches(stream: Iterable[object], source: str = "") -> dict[str, Any]:
    """The analytics rows of a stream of events as one ``pyarrow.RecordBatch`` per table (all tables, maybe empty).

    ``source`` fills ``sessions.source``, as the input's path does in the export.
    Each stream header in ``stream`` starts a new session stream.
    """
    sessions = rows_of(stream, source)
    out: dict[str, Any] = {}
    for table in TABLES:
        rows = [r for s in sessions for r in s.tables[table]]
        t = arrow_table(table, rows)
        out[table] = t.combine_chunks().to_batches()[0] if rows else _empty_batch(t)
    return out


def _empty_batch(table: Any) -> Any:
    import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]

    return pa.RecordBatch.from_pylist([], schema=table.schema)


#: The columns of :func:`event_batch`: the envelope, ``body`` (JSON text of the body,
#: its ``kind`` included) and ``native`` (the native message's bytes, unchanged).
EVENT_COLUMNS = (
    "session_id",
    "agent",
    "subagent_id",
    "seq",
    "ts",
    "turn_id",
    "origin",
    "kind",
    "protocol",
    "method",
    "body",
    "native",
)


def event_batch(stream: Iterable[object]) -> Any:
    """The envelope events of a stream as one ``pyarrow.RecordBatch`` (:data:`EVENT_COLUMNS`).

    Session-level CoreEvents (``session.created``, ``message.completed``...) carry no
    envelope and are left out: the ``sessions`` and ``turns`` tables hold what they say.
    """
    pa = _import_pyarrow()
    cols: dict[str, list[Any]] = {name: [] for name in EVENT_COLUMNS}
    for ev in stream:
        if not isinstance(ev, SessionEvent):
            continue
        env = ev.event
        for name, value in (
            ("session_id", env.session_id),
            ("agent", env.agent),
            ("subagent_id", env.subagent_id),
            ("seq", env.seq),
            ("ts", None if env.ts == UNKNOWN_TS else _ts(env.ts)),  # a time the input lacks is NULL, as in the tables
            ("turn_id", env.turn_id),
            ("origin", env.origin),
            ("kind", env.kind),
            ("protocol", env.native.protocol),
            ("method", env.native.method),
            ("body", msgspec.json.encode(env.body).decode("utf-8")),
            ("native", msgspec.json.encode(env.native.payload)),
        ):
            cols[name].append(value)
    types = {"seq": pa.int64(), "ts": pa.timestamp("ms", tz="UTC"), "native": pa.binary()}
    schema = pa.schema([pa.field(name, types.get(name, pa.string())) for name in EVENT_COLUMNS])
    return pa.RecordBatch.from_arrays(
        [pa.array(cols[n], type=schema.field(n).type) for n in EVENT_COLUMNS], schema=schema
    )
