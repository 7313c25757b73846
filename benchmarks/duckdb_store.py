"""What a DuckDB export's bookkeeping costs: replacing stored sessions, saving the files' stamps.

    .venv/bin/python benchmarks/duckdb_store.py [--copies 5] [--replace 256]

A session is replaced when a richer input of it comes (a live stream's session, then
its transcript), and the export deletes its stored rows from every table before it
writes the new ones.  This exports the corpus of ``scale.py`` (the kits' captures,
``--copies`` times with fresh ids) to a DuckDB file, then, in this process and inside
transactions rolled back, deletes ``--replace`` of its sessions from every table the
two ways: the way the export deletes them (one statement per table, the keys as a
list) and one statement per session and table (what it did before).  Then it saves
the stamps of the corpus's files (``analytics_files``: one row a file, written again
at the end of each export that read a file) the two ways: as the export saves them
(the columns as lists, one statement) and one ``INSERT`` a row (``executemany``, what
it did before).  Prints the best of ``--rounds`` of each, and their ratios.
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import scale

from normalize.analytics._schema import TABLES
from normalize.analytics._store import DuckDBStore, _stamp_rows, _stamps_from


def timed(con: Any, work: Callable[[], None], rounds: int, *, undo: bool = True) -> float:
    """The best time of ``work``; with ``undo``, each run inside a transaction rolled back."""
    best = float("inf")
    for _ in range(rounds):
        if undo:
            con.execute("BEGIN TRANSACTION")
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
        if undo:
            con.execute("ROLLBACK")
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--copies", type=int, default=5)
    parser.add_argument("--replace", type=int, default=256, help="sessions replaced at once (an export's flush)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    duckdb: Any = importlib.import_module("duckdb")  # untyped
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        files, size = scale.corpus(corpus, args.copies)
        db = Path(tmp) / "sessions.duckdb"
        normalize = Path(sys.executable).parent / "normalize"
        subprocess.run([str(normalize), "export", str(corpus), "--duckdb", str(db)], check=True, capture_output=True)
        con = duckdb.connect(str(db))
        rows = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
        keys = [r[0] for r in con.execute("SELECT root_key FROM sessions ORDER BY root_key").fetchall()]
        keys = keys[:: max(len(keys) // args.replace, 1)][: args.replace]

        def batched() -> None:
            for table in TABLES:
                con.execute(f"DELETE FROM {table} WHERE root_key IN (SELECT unnest(?::VARCHAR[]))", [keys])

        def per_session() -> None:
            for key in keys:
                for table in TABLES:
                    con.execute(f"DELETE FROM {table} WHERE root_key = ?", [key])

        one = timed(con, batched, args.rounds)
        each = timed(con, per_session, args.rounds)
        store = DuckDBStore.__new__(DuckDBStore)  # its _save_files on this connection, its stamps as read
        store.con = con
        store.files = _stamps_from(con.execute("SELECT * FROM analytics_files").fetchall())
        stamps = _stamp_rows(store.files)

        def row_by_row() -> None:
            con.execute("BEGIN TRANSACTION")
            con.execute("DELETE FROM analytics_files")
            con.executemany("INSERT INTO analytics_files VALUES (?, ?, ?, ?, ?)", stamps)
            con.execute("COMMIT")

        # both commit, as an export does; each writes the same stamps again
        saved = timed(con, store._save_files, args.rounds, undo=False)
        rowwise = timed(con, row_by_row, args.rounds, undo=False)
        con.close()
    print(f"{files} files ({size / 1e6:.0f} MB), {rows['sessions']} sessions, {rows['events']} events stored")
    print(f"{len(keys)} sessions replaced: one DELETE per table {one * 1e3:.0f} ms, ", end="")
    print(f"one per session and table {each * 1e3:.0f} ms ({each / one:.0f}x)")
    print(f"{len(stamps)} files' stamps saved: one statement {saved * 1e3:.0f} ms, ", end="")
    print(f"one INSERT a row {rowwise * 1e3:.0f} ms ({rowwise / saved:.0f}x)")


if __name__ == "__main__":
    main()
