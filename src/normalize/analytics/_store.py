"""Writing the tables: one DuckDB file, or a Parquet dataset partitioned by agent and date.

Both are incremental and idempotent, by session key: a session already stored
is skipped, unless the new input holds more of it (more turns, then more
events), in which case its rows are replaced, all tables at once.  Writes are
buffered and flushed every ``FLUSH_SESSIONS`` sessions, so memory stays bounded
by the buffer, not by the corpus.

duckdb and pyarrow are imported here, lazily, by the functions that need them
(the ``analytics`` extra).
"""

from __future__ import annotations

import hashlib
import json
import os
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from normalize import UsageError

from ._load import InputSpec, outranks, prefer
from ._schema import ANALYTICS_SCHEMA_VERSION, TABLES, ColumnType
from ._tables import Row, SessionRows, key_of

if TYPE_CHECKING:
    from ._listing import ListedInput  # which imports this module

__all__ = [
    "FLUSH_SESSIONS",
    "DuckDBStore",
    "ExportResult",
    "FileStamp",
    "ParquetStore",
    "drop_sessions",
    "move_file",
    "partition_of",
    "stamp_of",
    "write_partitions",
]

#: Sessions buffered before a write: a few hundred sessions' rows is a few MB.
FLUSH_SESSIONS = 256

_DUCK_TYPES: dict[ColumnType, str] = {
    "str": "VARCHAR",
    "int": "BIGINT",
    "float": "DOUBLE",
    "bool": "BOOLEAN",
    "ts": "TIMESTAMPTZ",
}


def _import_pyarrow() -> Any:
    try:
        import pyarrow  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        raise UsageError("this needs pyarrow: pip install 'agent-normalize[analytics]'") from None
    return pyarrow


def _import_duckdb() -> Any:
    try:
        import duckdb  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        raise UsageError("this needs duckdb: pip install 'agent-normalize[analytics]'") from None
    return duckdb


def _ts(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def arrow_table(table: str, rows: list[Row]) -> Any:
    """Rows of one table as an Arrow table with the schema's types."""
    pa = _import_pyarrow()
    types = {
        "str": pa.string(),
        "int": pa.int64(),
        "float": pa.float64(),
        "bool": pa.bool_(),
        "ts": pa.timestamp("ms", tz="UTC"),
    }
    arrays = []
    fields = []
    for i, (name, kind) in enumerate(TABLES[table]):
        values = [r[i] for r in rows]
        if kind == "ts":
            values = [_ts(v) for v in values]
        arrays.append(pa.array(values, type=types[kind]))
        fields.append(pa.field(name, types[kind]))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


@dataclass(frozen=True)
class FileStamp:
    """What an export remembers of an input file: its size, modification time and content hash.

    ``sha256`` is empty when the file was stamped from a listing (a cluster export's
    client reads no file), or ``tag:`` and the version tag an object store gave (an ETag).
    """

    size: int
    mtime_ns: int
    sha256: str
    companions: tuple[str, ...] = ()  # of a session's main file: the files read with it


def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def stamp_of(path: Path) -> FileStamp:
    st = path.stat()
    return FileStamp(st.st_size, st.st_mtime_ns, _sha256(path))


def _stamps_from(rows: Iterable[tuple[Any, ...]]) -> dict[str, FileStamp]:
    return {
        str(path): FileStamp(int(size), int(mtime), str(digest), tuple(json.loads(comps or "[]")))
        for path, size, mtime, digest, comps in rows
    }


def _stamp_rows(files: dict[str, FileStamp]) -> list[tuple[Any, ...]]:
    return [(p, f.size, f.mtime_ns, f.sha256, json.dumps(list(f.companions))) for p, f in sorted(files.items())]


class ExportResult:
    """What an export did: sessions added, replaced by a richer input, skipped as already stored."""

    def __init__(self) -> None:
        self.added = 0
        self.replaced = 0
        self.skipped = 0

    def as_json(self) -> dict[str, int]:
        return {"added": self.added, "replaced": self.replaced, "skipped": self.skipped}


class _Buffered:
    """Decides per session (add, replace, skip) and buffers the rows to write."""

    def __init__(self) -> None:
        self.result = ExportResult()
        self.known: dict[str, tuple[tuple[int, int], str]] = {}
        self.buffer: dict[str, SessionRows] = {}
        self.replace: set[str] = set()
        #: the sessions this run wrote: one read again, richer, replaces them but is no
        #: session replaced (it was not stored before the run; a cluster export counts the same)
        self.written: set[str] = set()
        #: the input files already exported, by path (what ``unchanged`` compares with)
        self.files: dict[str, FileStamp] = {}

    def unchanged(self, spec: InputSpec) -> bool:
        """Whether every file of an input is as it was when exported: same size and time, else same content.

        A file whose size and modification time are the stored ones is taken as unchanged
        without reading it; one of the same size with another time is hashed (a copy, a
        touch); any other, or a session whose companion files changed, is read again.
        """
        main = self.files.get(spec.main)
        if main is None or main.companions != spec.companions:
            return False
        for path in spec.paths:
            old = self.files.get(str(path))
            if old is None:
                return False
            try:
                st = path.stat()
            except OSError:
                return False
            if st.st_size != old.size:
                return False
            if st.st_mtime_ns != old.mtime_ns:
                if _sha256(path) != old.sha256:
                    return False
                self.files[str(path)] = FileStamp(st.st_size, st.st_mtime_ns, old.sha256, old.companions)
                self._stamped = True
        return True

    def remember(self, specs: Iterable[InputSpec]) -> None:
        """Stamp the files of inputs just exported, and save the stamps."""
        for spec in specs:
            for path in spec.paths:
                try:
                    stamp = stamp_of(path)
                except OSError:  # gone since it was read: it will be read again next time
                    self.files.pop(str(path), None)
                    continue
                comps = spec.companions if str(path) == spec.main else ()
                self.files[str(path)] = FileStamp(stamp.size, stamp.mtime_ns, stamp.sha256, comps)
            self._stamped = True
        self._save_if_stamped()

    def unchanged_listed(self, spec: ListedInput) -> bool:
        """Whether every file of a listed input is as listed when an export stamped it: same
        size and modification time, and same version tag where the file system gives one.

        A cluster export's client reads no file, so unlike :meth:`unchanged` nothing is
        hashed: a file whose time changed is read again, and so is one listed with no time.
        """
        files = spec.listed()
        if files is None:
            return False
        main = self.files.get(spec.main)
        if main is None or main.companions != spec.companions:
            return False
        for name, listed in files:
            old = self.files.get(name)
            if old is None or not listed.mtime_ns or (old.size, old.mtime_ns) != (listed.size, listed.mtime_ns):
                return False
            if listed.tag and old.sha256 != f"tag:{listed.tag}":
                return False
        return True

    def remember_listed(self, specs: Iterable[ListedInput]) -> None:
        """Stamp the files of listed inputs just exported, as the listing gave them, and save the stamps."""
        for spec in specs:
            for name, listed in spec.listed() or ():
                if not listed.mtime_ns:  # no time to compare with: read again next time
                    self.files.pop(name, None)
                    continue
                comps = spec.companions if name == spec.main else ()
                tag = f"tag:{listed.tag}" if listed.tag else ""
                self.files[name] = FileStamp(listed.size, listed.mtime_ns, tag, comps)
            self._stamped = True
        self._save_if_stamped()

    _stamped = False

    def _save_if_stamped(self) -> None:
        """Save the stamps if a file was stamped since they were last saved."""
        if self._stamped:
            self._save_files()
            self._stamped = False

    def _save_files(self) -> None:
        raise NotImplementedError

    def offer(self, rows: SessionRows) -> None:
        """Buffer a session's rows unless the store already holds as much of it.

        Within one run the richer of two inputs wins (:func:`prefer`), whether the first was
        flushed already or not; against what was stored before the run, only a strictly
        richer input replaces (the same session from another path is left alone).
        """
        have = self.buffer.get(rows.key)
        if have is not None:
            if prefer(rows, have):
                self.buffer[rows.key] = rows
            self.result.skipped += 1
            return
        stored = self.known.get(rows.key)
        if stored is not None:
            # written earlier in this run: the rule of the buffer (a tie goes to the path that
            # sorts first), so the copy kept does not depend on when the buffer was flushed
            same_run = rows.key in self.written
            if not (outranks((rows.richness, rows.source), stored) if same_run else rows.richness > stored[0]):
                self.result.skipped += 1
                return
            self.replace.add(rows.key)
            if same_run:
                self.result.skipped += 1  # one session read twice in this run: the richer kept
            else:
                self.result.replaced += 1
        else:
            self.result.added += 1
        self.buffer[rows.key] = rows
        if len(self.buffer) >= FLUSH_SESSIONS:
            self.flush()

    def write_all(self, sessions: Iterable[SessionRows]) -> ExportResult:
        for rows in sessions:
            self.offer(rows)
        self.flush()
        return self.result

    def flush(self) -> None:
        if self.buffer or self.replace:
            self._write(list(self.buffer.values()), set(self.replace))
        for rows in self.buffer.values():
            self.known[rows.key] = (rows.richness, rows.source)
        self.written.update(self.buffer)
        self.buffer.clear()
        self.replace.clear()

    def _write(self, sessions: list[SessionRows], replace: set[str]) -> None:
        raise NotImplementedError


def _known_from(rows: Iterable[tuple[Any, ...]]) -> dict[str, tuple[tuple[int, int], str]]:
    return {str(k): ((int(t or 0), int(e or 0)), str(s or "")) for k, t, e, s in rows}


class DuckDBStore(_Buffered):
    """The tables in one DuckDB file (created if absent)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        duckdb = _import_duckdb()
        self.path = path
        try:
            self.con = duckdb.connect(str(path))
        except duckdb.Error as exc:  # locked by another process, not a DuckDB file, ...
            raise UsageError(f"{path}: {exc}") from None
        self._create()
        known = self.con.execute("SELECT session_key, turns, events, source FROM sessions").fetchall()
        self.known = _known_from(known)
        self.files = _stamps_from(
            self.con.execute("SELECT path, size, mtime_ns, sha256, companions FROM analytics_files").fetchall()
        )

    def _save_files(self) -> None:
        self.con.execute("BEGIN TRANSACTION")
        try:
            self.con.execute("DELETE FROM analytics_files")
            rows = _stamp_rows(self.files)
            if rows:  # the columns as lists, in one statement: executemany costs about a millisecond a row
                columns = [list(c) for c in zip(*rows, strict=True)]
                self.con.execute(
                    "INSERT INTO analytics_files SELECT unnest(?::VARCHAR[]), unnest(?::BIGINT[]), "
                    "unnest(?::BIGINT[]), unnest(?::VARCHAR[]), unnest(?::VARCHAR[])",
                    columns,
                )
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")

    def _create(self) -> None:
        self.con.execute("CREATE TABLE IF NOT EXISTS analytics_meta (name VARCHAR PRIMARY KEY, value VARCHAR)")
        self.con.execute(
            "CREATE TABLE IF NOT EXISTS analytics_files "
            "(path VARCHAR PRIMARY KEY, size BIGINT, mtime_ns BIGINT, sha256 VARCHAR, companions VARCHAR)"
        )
        row = self.con.execute("SELECT value FROM analytics_meta WHERE name = 'schema_version'").fetchone()
        if row is None:
            self.con.execute("INSERT INTO analytics_meta VALUES ('schema_version', ?)", [ANALYTICS_SCHEMA_VERSION])
        elif row[0] != ANALYTICS_SCHEMA_VERSION:
            raise UsageError(
                f"{self.path}: analytics schema {row[0]}, this normalize writes {ANALYTICS_SCHEMA_VERSION}; "
                "export to a new file"
            )
        for table, columns in TABLES.items():
            cols = ", ".join(
                f"{name} {_DUCK_TYPES[kind]}{' PRIMARY KEY' if i == 0 else ''}"
                for i, (name, kind) in enumerate(columns)
            )
            self.con.execute(f"CREATE TABLE IF NOT EXISTS {table} ({cols})")

    def _write(self, sessions: list[SessionRows], replace: set[str]) -> None:
        self.con.execute("BEGIN TRANSACTION")
        try:
            if replace:  # one statement per table: each DELETE scans its table
                keys = sorted(replace)
                for table in TABLES:
                    self.con.execute(f"DELETE FROM {table} WHERE root_key IN (SELECT unnest(?::VARCHAR[]))", [keys])
            for table in TABLES:
                rows = [r for s in sessions for r in s.tables[table]]
                if not rows:
                    continue
                arrow = arrow_table(table, rows)
                self.con.register("incoming", arrow)
                try:
                    self.con.execute(f"INSERT INTO {table} SELECT * FROM incoming")
                finally:
                    self.con.unregister("incoming")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")

    def close(self) -> None:
        self.con.close()


def _slug(value: str) -> str:
    return urllib.parse.quote(value, safe="")


class ParquetStore(_Buffered):
    """The tables as a Parquet dataset: ``DIR/<table>/agent=<agent>/date=<YYYY-MM-DD>/part-<key>.parquet``.

    The partition is the top-level session's (its agent, the UTC date it started), so
    every row of a session lives in one partition of each table.  ``agent`` and ``date``
    are hive partition keys (percent-encoded), read back as columns by DuckDB and pyarrow.
    """

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root
        self.pa = _import_pyarrow()
        import pyarrow.parquet  # type: ignore[import-untyped, unused-ignore]

        self.pq: Any = pyarrow.parquet
        root.mkdir(parents=True, exist_ok=True)
        meta = root / "_analytics.json"
        if meta.exists():
            version = json.loads(meta.read_text()).get("schemaVersion")
            if version != ANALYTICS_SCHEMA_VERSION:
                raise UsageError(
                    f"{root}: analytics schema {version}, this normalize writes {ANALYTICS_SCHEMA_VERSION}; "
                    "export to a new folder"
                )
        else:
            meta.write_text(json.dumps({"schemaVersion": ANALYTICS_SCHEMA_VERSION, "tables": list(TABLES)}) + "\n")
        #: where each stored session's rows are: one file name per table, the same in each
        self.where: dict[str, Path] = {}
        self.known = _known_from(self._stored_sessions())
        stamps = root / "_files.json"
        if stamps.exists():
            self.files = _stamps_from(json.loads(stamps.read_text()))

    def _save_files(self) -> None:
        target = self.root / "_files.json"
        tmp = target.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(_stamp_rows(self.files)) + "\n")
        os.replace(tmp, target)

    def _files(self, table: str) -> list[Path]:
        return sorted((self.root / table).rglob("*.parquet"))

    def _stored_sessions(self) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        folder = self.root / "sessions"
        for f in self._files("sessions"):
            t = self.pq.ParquetFile(f).read(columns=["session_key", "turns", "events", "source"])
            rows = [(row["session_key"], row["turns"], row["events"], row["source"]) for row in t.to_pylist()]
            out.extend(rows)
            at = f.relative_to(folder)
            self.where.update((str(row[0]), at) for row in rows)
        return out

    def _write(self, sessions: list[SessionRows], replace: set[str]) -> None:
        if replace:
            drop_sessions(self.root, replace, self.where)
        write_partitions(self.root, sessions)
        self.where.update(placement(sessions))


def partition_of(rows: SessionRows) -> tuple[str, str]:
    """The Parquet partition of a session's rows: its agent, and the UTC date it started (``unknown``)."""
    s = rows.session
    started = _ts(s["started_at"])
    return str(s["agent"]), started.date().isoformat() if started else "unknown"


def _parquet() -> Any:
    _import_pyarrow()
    import pyarrow.parquet  # type: ignore[import-untyped, unused-ignore]

    return pyarrow.parquet


def _write_file(table: Any, path: Path) -> None:
    """Write a Parquet file whole or not at all: a writer killed mid-way leaves no half file behind."""
    tmp = path.with_name(f".{path.name}.tmp")
    _parquet().write_table(table, tmp)
    tmp.replace(path)


def move_file(src: Path, dest: Path) -> None:
    """Move the Parquet file ``src`` to ``dest``, keeping the rows ``dest`` holds if it exists.

    Two writers that staged the same sessions name their files alike (``part-<key>`` of
    the sessions they wrote), and each then keeps only the sessions it won (a live
    recording and a stored file of one session and its sub-agent's): each holds rows the
    other lacks, and neither may replace the other."""
    if not dest.exists():
        src.replace(dest)
        return
    pa = _import_pyarrow()
    pq = _parquet()
    _write_file(pa.concat_tables([pq.ParquetFile(dest).read(), pq.ParquetFile(src).read()]), dest)
    src.unlink()


def write_partitions(root: Path, sessions: list[SessionRows]) -> list[Path]:
    """Sessions' rows as ``root/<table>/agent=<agent>/date=<date>/part-<key>.parquet``; returns the files written.

    One file per table and partition, named after the sessions in it, so writing the
    same sessions again writes the same files.
    """
    written: list[Path] = []
    for at, members in _files_of(sessions):
        for table in TABLES:
            rows = [r for m in members for r in m.tables[table]]
            if not rows:
                continue
            path = root / table / at
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_file(arrow_table(table, rows), path)
            written.append(path)
    return written


def _files_of(sessions: list[SessionRows]) -> list[tuple[Path, list[SessionRows]]]:
    """The file of each partition's sessions, relative to a table's folder (the same in every table)."""
    groups: dict[tuple[str, str], list[SessionRows]] = {}
    for s in sessions:
        groups.setdefault(partition_of(s), []).append(s)
    out: list[tuple[Path, list[SessionRows]]] = []
    for (agent, date), members in sorted(groups.items()):
        name = f"part-{key_of(*sorted(m.key for m in members))}.parquet"
        out.append((Path(f"agent={_slug(agent)}") / f"date={date}" / name, members))
    return out


def placement(sessions: list[SessionRows]) -> dict[str, Path]:
    """Where :func:`write_partitions` puts each session's rows, relative to a table's folder."""
    return {m.key: at for at, members in _files_of(sessions) for m in members}


def drop_sessions(root: Path, keys: set[str], where: dict[str, Path] | None = None) -> None:
    """Rewrite the files under ``root/<table>/`` that hold rows of these sessions (``root_key``), without them.

    ``where`` (a session's file relative to a table's folder, :func:`placement`) limits
    the rewrite to those sessions' files; without it, or for a session it does not
    name, every file is read.
    """
    pa = _import_pyarrow()
    pq = _parquet()
    import pyarrow.compute as pc  # type: ignore[import-untyped, unused-ignore]

    # the sessions' files, relative to a table's folder; None: not known, every file is read
    held = {where[k] for k in keys} if where is not None and all(k in where for k in keys) else None
    for table in TABLES:
        if held is None:
            files = sorted((root / table).rglob("*.parquet"))
        else:
            files = sorted(p for p in (root / table / at for at in held) if p.exists())
        for f in files:
            t = pq.ParquetFile(f).read()
            keep = pc.invert(pc.is_in(t["root_key"], value_set=pa.array(sorted(keys))))
            kept = t.filter(keep)
            if kept.num_rows == t.num_rows:
                continue
            if kept.num_rows == 0:
                f.unlink()
            else:
                _write_file(kept, f)
