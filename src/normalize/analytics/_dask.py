"""The Parquet export on a dask.distributed cluster.

How a run goes (the rules the tests hold it to):

* The client lists the inputs (:mod:`._listing`: names and sizes, no file read) and
  groups them into tasks by size (:func:`plan`): the largest inputs first, each
  input of ``task_bytes`` or more a task of its own, the others packed together up
  to ``task_bytes``, so one huge session never waits behind a queue of small ones.
* A task (:func:`convert_task`, on a worker) opens its inputs, detects their
  protocol and converts them (the steps of the pure functions of :mod:`._work`:
  events, then rows), keeps each session once (the richest copy, as the
  local export does), leaves out the sessions the dataset already holds as fully,
  and writes the rest under its own staging folder,
  ``DIR/_staging/<run>/<task>/``, laid out as the dataset itself.  It returns a
  summary (keys, richness, source), never the rows: the rows go from the worker to
  the shared file system, not through the client.
* A task that raises, or whose worker dies, is run again (``retries``, and the
  scheduler's ``allowed-failures``).  A task of several inputs that fails again is
  split into one task per input; an input whose own task fails twice is reported as
  a problem, like an unreadable file, and the others are written.
* When every task is done, the client commits: for a session staged by several
  tasks the richest copy is kept (the others are rewritten out of their staging
  files), the stored rows of sessions that a richer input replaces are dropped, and
  the staged files are moved into the dataset.  A task run twice writes the same
  files in the same staging folder, and only the tasks whose result the client
  holds are committed: no row is lost or written twice when a worker dies.

Workers and client must see ``DIR`` and the local inputs at the same paths (a shared
file system); relative paths are taken from the client's working directory.  Inputs
may also be fsspec URLs (``s3://...``) the workers can open.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import msgspec

from normalize import InputError, UsageError
from normalize._places import inputs_or_defaults

from ._export import ExportReport
from ._listing import ListedInput, is_url, list_inputs, listed_events
from ._load import Loaded, outranks, rows_of
from ._store import ExportResult, ParquetStore, drop_sessions, move_file, write_partitions
from ._tables import SessionRows, new_redactor, redact_rows

__all__ = [
    "TASK_BYTES",
    "ExportReport",
    "Task",
    "TaskResult",
    "connect",
    "convert_task",
    "export_on",
    "plan",
]

#: Input bytes per task: a task's rows (a few times its input) stay well inside a worker's memory,
#: and a task takes about a second, so the scheduler's overhead per task (about 1 ms) is noise.
TASK_BYTES = 16 << 20

Progress = Callable[[int, int], None]

#: A future's states that are final: any other ("lost", "pending") is a result being computed again.
_SETTLED = frozenset({"finished", "error", "cancelled"})


@dataclass(frozen=True)
class Task:
    """Some inputs converted together by one worker."""

    index: int
    specs: tuple[ListedInput, ...]
    size: int


def plan(specs: Sequence[ListedInput], sizes: Sequence[int], task_bytes: int = TASK_BYTES) -> list[Task]:
    """Inputs grouped into tasks, largest first: an input of ``task_bytes`` or more alone, the rest packed up to it."""
    order = sorted(range(len(specs)), key=lambda i: (-sizes[i], specs[i].main))
    groups: list[list[int]] = []
    filled = 0
    for i in order:
        if not groups or filled + sizes[i] > task_bytes:
            groups.append([])
            filled = 0
        groups[-1].append(i)
        filled += sizes[i]
    tasks = [Task(0, tuple(specs[i] for i in g), sum(sizes[i] for i in g)) for g in groups]
    tasks.sort(key=lambda t: -t.size)
    return [replace(t, index=n) for n, t in enumerate(tasks)]


@dataclass(frozen=True)
class Staged:
    """A session a task wrote to its staging folder."""

    key: str
    richness: tuple[int, int]
    source: str


@dataclass
class TaskResult:
    """What a task did: the sessions it staged, the ones it left out, the inputs it could not read."""

    index: int
    staged: list[Staged] = field(default_factory=list)
    sessions: int = 0
    skipped: int = 0
    problems: list[str] = field(default_factory=list)
    #: secrets replaced, by kind, when the export redacts
    redacted: dict[str, int] = field(default_factory=dict)
    #: the inputs read without a problem: (main file, session key inside it)
    read: list[tuple[str, str | None]] = field(default_factory=list)


#: How much of each session the dataset holds, (turns, events) by session key: the file the client writes.
_Stored = dict[str, tuple[int, int]]
_stored_decoder = msgspec.json.Decoder(_Stored)
#: The last file read by this worker process, and what it holds: every task of a run reads the same one.
_stored_cache: tuple[str, _Stored] | None = None


def write_stored(path: Path, stored: _Stored) -> str:
    """Write what the dataset holds where every worker reads it; the file's path, for :func:`convert_task`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(msgspec.json.encode(stored))
    return str(path)


def _read_stored(path: str) -> _Stored:
    global _stored_cache
    cached = _stored_cache
    if cached is not None and cached[0] == path:
        return cached[1]
    stored = _stored_decoder.decode(Path(path).read_bytes())
    _stored_cache = (path, stored)
    return stored


def convert_task(
    index: int,
    specs: Sequence[ListedInput],
    base: str,
    staging: str,
    stored: str,
    redact: bool = False,
) -> TaskResult:
    """Convert some inputs and stage the rows of the sessions the dataset lacks (runs on a worker).

    ``stored`` is the file (:func:`write_stored`) saying how much of each session the
    dataset holds (turns, events): read from the shared file system, not held by a
    worker, so no worker's death can lose it.  With ``redact``, every text cell's
    secrets are replaced here, on the worker, before any row is written.  The staging
    folder is emptied first, so running the task again gives the same files.
    """
    known = _read_stored(stored)
    folder = Path(staging)
    if folder.exists():
        shutil.rmtree(folder)
    result = TaskResult(index)
    kept = Loaded()
    redactor = new_redactor() if redact else None
    for spec in specs:
        try:
            rows = rows_of(listed_events(spec, base), spec.main)
        except InputError as exc:
            result.problems.append(f"{spec.main}: {exc.message}")
            continue
        except OSError as exc:  # one unreadable file is reported, the rest goes on (as the local export)
            result.problems.append(f"{spec.main}: {exc.strerror or exc}")
            continue
        result.read.append((spec.main, spec.key))
        for r in rows:
            result.sessions += 1
            kept.offer(redact_rows(r, redactor))
    if redactor is not None:
        result.redacted = dict(redactor.counts)
    result.skipped = kept.duplicates
    write: list[SessionRows] = []
    for key in sorted(kept.sessions):
        session = kept.sessions[key]
        have = known.get(key)
        if have is not None and session.richness <= have:
            result.skipped += 1
            continue
        write.append(session)
        result.staged.append(Staged(key, session.richness, session.source))
    write_partitions(folder, write)
    return result


def _better(a: Staged, b: Staged) -> bool:
    """Whether staged copy ``a`` beats ``b`` of the same session: the rule of :func:`~._load.prefer`."""
    return outranks((a.richness, a.source), (b.richness, b.source))


def export_on(
    client: Any,
    paths: Iterable[str | Path],
    root: Path,
    *,
    protocol: str | None = None,
    task_bytes: int = TASK_BYTES,
    progress: Progress | None = None,
    redact: bool = False,
    reread: bool = False,
) -> ExportReport:
    """Export the sessions under ``paths`` (local paths, or fsspec URLs) to the Parquet dataset ``root``.

    An input whose files the listing gives with the size and modification time (and
    version tag) an earlier export stamped is not read again, unless ``reread`` or
    ``redact``.  With ``redact`` the workers replace the secrets of every row they write."""
    if redact:
        new_redactor()  # detect-secrets missing is a usage error here, not a failure of every task
    distributed = _import_distributed()
    store = ParquetStore(root)
    problems: list[str] = []
    listed = [spec for source in paths for spec in list_inputs(source, protocol=protocol)]
    specs = listed if reread or redact else [s for s in listed if not store.unchanged_listed(s)]
    tasks = plan(specs, [s.size for s in specs], task_bytes)
    run = root.absolute() / "_staging" / uuid.uuid4().hex  # the workers' working folder may be another
    base = os.getcwd()
    # one file every worker reads once, not one copy per task: data scattered to the workers would be
    # lost with the worker holding it (the scheduler keeps one replica), and every task with it
    stored = write_stored(run / "stored.json", {k: v[0] for k, v in store.known.items()})
    by_key: dict[str, Task] = {}

    def submit(task: Task) -> Any:
        key = f"normalize-export-{run.name}-{task.index}"
        by_key[key] = task
        staging = str(run / f"{task.index:06d}")
        return client.submit(
            convert_task,
            task.index,
            task.specs,
            base,
            staging,
            stored,
            redact,
            key=key,
            retries=1,
            priority=len(tasks) - task.index,
        )

    results: list[TaskResult] = []
    split = 0
    total = len(tasks)
    done = 0
    try:
        pending = distributed.as_completed([submit(t) for t in tasks])
        for fut in pending:
            task = by_key[fut.key]
            if fut.status not in _SETTLED:
                # it finished, but its result was lost with its worker before it was fetched: the
                # scheduler computes it again, and a result is only committed once it is in hand
                distributed.wait([fut])
            if fut.status == "finished":
                results.append(fut.result())
            elif len(task.specs) > 1:
                # one input may be what kills it: each gets a task of its own, the others still get written
                for spec in task.specs:
                    pending.add(submit(Task(total, (spec,), spec.size)))
                    total += 1
                split += 1
            else:
                exc = fut.exception() if fut.status == "error" else None  # else cancelled: the scheduler gave it up
                reason = f"{type(exc).__name__}: {exc}" if exc is not None else fut.status
                problems.append(f"{task.specs[0].main}: failed twice on the cluster ({reason})")
            fut.release()
            done += 1
            if progress is not None:
                progress(done, total)
        result = _commit(store, run, results)
        # a file is stamped once every input it holds was read (a database file holds several)
        read = {done for r in results for done in r.read}
        unread = {s.main for s in specs if (s.main, s.key) not in read}
        store.remember_listed(s for s in specs if s.main not in unread)
    finally:
        if run.exists():
            shutil.rmtree(run)
        staging = run.parent
        if staging.exists() and not any(staging.iterdir()):
            staging.rmdir()
    redacted: Counter[str] = Counter()
    for r in sorted(results, key=lambda r: r.index):
        problems.extend(r.problems)
        redacted.update(r.redacted)
    sessions = sum(r.sessions for r in results)
    unchanged = len(listed) - len(specs)
    return ExportReport(
        result, problems, len(listed), sessions, len(tasks), split, unchanged, dict(sorted(redacted.items()))
    )


def _commit(store: ParquetStore, run: Path, results: list[TaskResult]) -> ExportResult:
    """Keep one copy of each staged session, drop the stored rows it replaces, move the staged files in."""
    best: dict[str, tuple[Staged, int]] = {}
    losers: dict[int, set[str]] = {}
    out = ExportResult()
    for r in sorted(results, key=lambda r: r.index):
        out.skipped += r.skipped
        for s in r.staged:
            have = best.get(s.key)
            if have is None:
                best[s.key] = (s, r.index)
                continue
            out.skipped += 1
            if _better(s, have[0]):
                losers.setdefault(have[1], set()).add(s.key)
                best[s.key] = (s, r.index)
            else:
                losers.setdefault(r.index, set()).add(s.key)
    for index, keys in sorted(losers.items()):
        drop_sessions(run / f"{index:06d}", keys)
    replaced = {k for k in best if k in store.known}
    out.replaced = len(replaced)
    out.added = len(best) - len(replaced)
    if replaced:
        drop_sessions(store.root, replaced, store.where)  # only the files that hold them
    for r in results:
        folder = run / f"{r.index:06d}"
        for f in sorted(folder.rglob("*.parquet")):
            dest = store.root / f.relative_to(folder)
            dest.parent.mkdir(parents=True, exist_ok=True)
            move_file(f, dest)  # another task may have staged a file of the same name
    return out


# --------------------------------------------------------------------------
# connecting, and the command line


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise UsageError("--dask needs dask.distributed: pip install 'agent-normalize[dask]'") from None
    return distributed


_LOCAL = re.compile(r"local\[(\d+)\]")


@contextmanager
def connect(address: str) -> Iterator[Any]:
    """A ``distributed.Client`` for ``address``: a scheduler's address, or ``local[N]`` for N local worker processes.

    A local cluster listens on 127.0.0.1 only; it runs each failing task twice at most,
    as ``retries`` does for a task that raises.
    """
    distributed = _import_distributed()
    import dask

    local = _LOCAL.fullmatch(address)
    if local is not None:
        n = int(local.group(1))
        if n < 1:
            raise UsageError(f"--dask {address}: at least one worker")
        with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
            cluster = distributed.LocalCluster(
                n_workers=n,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address="127.0.0.1:0",  # a free port: 8787 may be taken
            )
        try:
            with distributed.Client(cluster) as client:
                yield client
        finally:
            cluster.close()
        return
    try:
        client = distributed.Client(address, timeout="20s")
    except (OSError, ValueError) as exc:
        raise UsageError(f"--dask {address}: no Dask scheduler there ({exc})") from None
    try:
        yield client
    finally:
        client.close()


def cmd_export_dask(args: argparse.Namespace, progress: Progress | None = None) -> ExportReport:
    """``normalize export ... --parquet DIR --dask ADDRESS``: the report, for the CLI to print."""
    if args.duckdb is not None:
        raise UsageError("--dask writes a Parquet dataset (--parquet DIR); DuckDB reads it with read_parquet")
    if args.parquet is None:
        raise UsageError("--dask needs --parquet DIR, a folder every worker sees")
    if args.jobs is not None:
        raise UsageError("--jobs is for one machine; with --dask the cluster's workers do the work")
    # no path: the agents' own folders, as for a local export
    inputs = [str(p) if is_url(p) else Path(p).expanduser() for p in args.inputs] or inputs_or_defaults([])
    with connect(args.dask) as client:
        return export_on(
            client,
            inputs,
            Path(args.parquet),
            protocol=args.protocol,
            task_bytes=int(args.task_mb * (1 << 20)),
            progress=progress,
            redact=bool(getattr(args, "redact", False)),
            reread=bool(getattr(args, "all", False)),
        )
