"""The analytics commands of the ``normalize`` CLI: ``stats``, ``export``, ``otel``.

:func:`add_commands` adds them to the main parser's subparsers; each sets
``func`` to a function taking the parsed arguments and returning the exit
code (0 done, 1 some input could not be read, 2 misuse), like the other
commands.  Without a path they read the agents' own folders (``normalize._places``).
duckdb, pyarrow and OpenTelemetry are imported only when a command runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from normalize import UsageError
from normalize._cli import _redactor
from normalize._places import inputs_or_defaults
from normalize._term import printable

from ._load import InputSpec, Loaded, Scan, load
from ._stats import BY, Filter, Line, Summary, key_names, parse_day, summarize
from ._tables import redact_rows

__all__ = ["add_commands", "cmd_export", "cmd_otel", "cmd_stats"]

Progress = Callable[[int, int], None]


@contextmanager
def _progress(label: str, stream: TextIO | None = None) -> Iterator[Progress | None]:
    """A rich progress bar on stderr, only when stderr is a terminal."""
    err = stream if stream is not None else sys.stderr
    if not err.isatty() or importlib.util.find_spec("rich") is None:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(file=err),
        transient=True,
    )
    task = bar.add_task(label, total=None)

    def update(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    with bar:
        yield update


def _jobs(args: argparse.Namespace) -> int:
    return int(args.jobs) if args.jobs is not None else (os.cpu_count() or 1)


def _load(args: argparse.Namespace, label: str, tables: tuple[str, ...]) -> Loaded:
    with _progress(label) as progress:
        loaded = load(
            inputs_or_defaults(args.inputs), protocol=args.protocol, jobs=_jobs(args), progress=progress, tables=tables
        )
    _tell(loaded.problems)
    return loaded


def _tell(problems: list[str]) -> None:
    for problem in problems:
        print(f"normalize: skipped: {printable(problem)}", file=sys.stderr)


def _told_unchanged(unchanged: int) -> None:
    if unchanged:
        print(f"normalize: {unchanged} files unchanged since the last export, not read again", file=sys.stderr)


def _told_redacted(counts: Mapping[str, int]) -> None:
    """What ``--redact`` removed, by kind (nothing when it removed nothing)."""
    if counts:
        from normalize._redact import summary_of

        print(f"normalize: redacted {summary_of(counts)}", file=sys.stderr)


def _told_left_unredacted(target: str, skipped: int) -> None:
    """With ``--redact``: the sessions already in the store were not rewritten, so not redacted."""
    if skipped:
        print(
            f"normalize: {target}: the {skipped} session(s) already there were left as they were, "
            "not redacted by this run (export into a new file to be sure)",
            file=sys.stderr,
        )


def _status(found: int, problems: list[str]) -> int:
    if not found:
        print("normalize: no session found in the input", file=sys.stderr)
        return 1
    return 1 if problems else 0


# --------------------------------------------------------------------------
# stats


def _fmt_int(n: int) -> str:
    return f"{n:,}"


_STATS_COLUMNS = (
    ("sessions", "sessions"),
    ("turns", "turns"),
    ("tool\ncalls", "tool_calls"),
    ("input\nincl. cached", "input_tokens"),
    ("cache\nread", "cache_read_tokens"),
    ("cache\nwrite", "cache_write_tokens"),
    ("output", "output_tokens"),
    ("cost\nUSD", "cost"),
)


def _cost_text(line: Line) -> str:
    if line.cost is None:
        return "-"
    mark = "~" if "estimated" in line.cost_sources else ""
    return f"{mark}{line.cost:,.2f}" + ("*" if line.unpriced_rows else "")


def _cells(line: Line) -> list[str]:
    out: list[str] = []
    for _, name in _STATS_COLUMNS:
        if name == "cost":
            out.append(_cost_text(line))
        elif name == "sessions":
            out.append(_fmt_int(line.sessions) + (f" +{line.subagents}" if line.subagents else ""))
        elif name in ("turns", "tool_calls"):
            out.append(_fmt_int(int(getattr(line, name))))
        else:
            out.append(_fmt_int(line.tokens[name]))
    return out


def render_stats(summary: Summary, out: TextIO, *, width: int | None = None) -> None:
    """The summary as a table; numbers are never cut: the group columns wrap first.

    Every cell is a plain ``Text`` (never read as rich markup) and every value from the
    input goes through :func:`printable` (no escape sequence reaches the terminal).
    """
    from rich import box
    from rich.console import Console
    from rich.measure import Measurement
    from rich.table import Table
    from rich.text import Text

    names = key_names(summary.by)
    lines = summary.sorted_lines()
    total = summary.total()
    rows = [([*(v or "-" for v in line.key)], _cells(line)) for line in lines]
    total_row = ([*(v or "" for v in total.key)], _cells(total))
    table = Table(
        title=f"normalize stats by {summary.by.replace('-', ' and ')}",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    need = 0
    for i, name in enumerate(names):
        widest = max(len(keys[i]) for keys, _ in [*rows, total_row])
        table.add_column(name, justify="left", overflow="fold", min_width=min(max(widest, len(name)), 16))
        need += min(max(widest, len(name)), 16) + 3
    for i, (header, _) in enumerate(_STATS_COLUMNS):
        widest = max(len(cells[i]) for _, cells in [*rows, total_row])
        widest = max(widest, *(len(part) for part in header.split("\n")))
        table.add_column(header, justify="right", no_wrap=True, min_width=widest)
        need += widest + 3
    for keys, cells in rows:
        table.add_row(*(Text(printable(c)) for c in [*keys, *cells]))
    if len(rows) > 1:
        table.add_section()
        table.add_row(*(Text(printable(c)) for c in [*total_row[0], *total_row[1]]), style="bold")
    if width is None and not out.isatty() and "COLUMNS" not in os.environ:
        width = 200  # a pipe or a file: no terminal to fit
    console = Console(file=out, width=width, highlight=False)
    need = Measurement.get(console, console.options.update(width=need), table).minimum
    if console.width < need:  # too narrow for the numbers: lines wrap in the terminal, numbers are never cut
        console = Console(file=out, width=need, highlight=False)
    console.print(table)
    notes = []
    if any("estimated" in line.cost_sources for line in lines):
        notes.append("~ cost estimated from the genai-prices table where the agent reports none")
    if any(line.unpriced_rows for line in lines):
        notes.append("* some usage has no known price (unknown model): its cost is not counted")
    if any(line.subagents for line in lines):
        notes.append("+N sub-agents, their usage counted once in their parent's")
    for note in notes:
        console.print(note)


def _filter(args: argparse.Namespace) -> Filter:
    try:
        since = parse_day(args.since) if args.since else None
        until = parse_day(args.until) if args.until else None
    except ValueError:
        raise UsageError("--since and --until take a day: YYYY-MM-DD or YYYYMMDD") from None
    return Filter(since, until, args.project)


def cmd_stats(args: argparse.Namespace) -> int:
    filt = _filter(args)
    loaded = _load(args, "reading sessions", ("sessions", "subagents", "usage", "tool_calls", "permissions"))
    summary = summarize((loaded.sessions[k] for k in sorted(loaded.sessions)), by=args.by, filter=filt)
    if args.json:
        doc = summary.as_json()
        doc["inputs"] = loaded.inputs
        doc["duplicates"] = loaded.duplicates
        doc["problems"] = loaded.problems
        print(json.dumps(doc, indent=2))
    else:
        render_stats(summary, sys.stdout)
    return _status(len(loaded.sessions), loaded.problems)


# --------------------------------------------------------------------------
# export


def cmd_export(args: argparse.Namespace) -> int:
    from ._store import DuckDBStore, ParquetStore

    if args.duckdb is None and args.parquet is None:
        raise UsageError("say where: --duckdb FILE and/or --parquet DIR")
    if args.dask is not None:
        return _export_dask(args)
    stores: dict[str, DuckDBStore | ParquetStore] = {}
    if args.duckdb is not None:
        stores["duckdb"] = DuckDBStore(Path(args.duckdb))
    if args.parquet is not None:
        stores["parquet"] = ParquetStore(Path(args.parquet))
    found = 0
    targets = list(stores.values())

    redactor = _redactor(args)

    def unchanged(spec: InputSpec) -> bool:
        # with --redact every file is read, so that sessions an earlier run left unredacted are named
        return not args.all and redactor is None and all(store.unchanged(spec) for store in targets)

    try:
        with _progress("converting sessions") as progress:
            scan = Scan(
                inputs_or_defaults(args.inputs),
                protocol=args.protocol,
                jobs=_jobs(args),
                progress=progress,
                skip=unchanged,
            )
            # each session goes to the stores as soon as its worker is done: memory is the stores' buffers
            for rows in scan:
                found += 1
                redact_rows(rows, redactor)
                for store in targets:
                    store.offer(rows)
        for store in targets:
            store.flush()
            store.remember(scan.read)
    finally:
        duck = stores.get("duckdb")
        if isinstance(duck, DuckDBStore):
            duck.close()
    _tell(scan.problems)
    _told_unchanged(scan.unchanged)
    _told_redacted(redactor.counts if redactor is not None else {})
    for target, store in stores.items():
        r = store.result
        print(
            f"normalize: {target}: {r.added} added, {r.replaced} replaced, {r.skipped} already there",
            file=sys.stderr,
        )
        if redactor is not None:
            _told_left_unredacted(target, r.skipped)
    return _status(found + scan.unchanged, scan.problems)


def _export_dask(args: argparse.Namespace) -> int:
    from ._dask import cmd_export_dask

    with _progress("converting on the cluster (tasks)") as progress:
        report = cmd_export_dask(args, progress)
    _tell(report.problems)
    _told_unchanged(report.unchanged)
    _told_redacted(report.redacted)
    r = report.result
    print(
        f"normalize: parquet: {r.added} added, {r.replaced} replaced, {r.skipped} already there "
        f"({report.inputs} inputs in {report.tasks} tasks)",
        file=sys.stderr,
    )
    if args.redact:
        _told_left_unredacted("parquet", r.skipped)
    return _status(report.sessions + report.unchanged, report.problems)


# --------------------------------------------------------------------------
# otel


def _tree(spans: list[Any]) -> list[str]:
    children: dict[int | None, list[Any]] = {}
    ids = {s.context.span_id for s in spans}
    for s in spans:
        parent = s.parent.span_id if s.parent is not None and s.parent.span_id in ids else None
        children.setdefault(parent, []).append(s)
    lines: list[str] = []

    def walk(parent: int | None, depth: int) -> None:
        for s in sorted(children.get(parent, []), key=lambda s: (s.start_time or 0, s.name)):
            ms = ((s.end_time or 0) - (s.start_time or 0)) / 1e6
            lines.append(f"{'  ' * depth}{printable(s.name)}  [{ms:.0f} ms]")
            walk(s.context.span_id, depth + 1)

    walk(None, 0)
    return lines


def cmd_otel(args: argparse.Namespace) -> int:
    from ._otel import emit_spans, otlp_exporter

    exporter: Any
    memory: Any = None
    if args.endpoint is not None:
        exporter = otlp_exporter(args.endpoint)
    else:
        try:
            from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        except ImportError:
            raise UsageError("this needs the OpenTelemetry SDK: pip install 'agent-normalize[otel]'") from None
        exporter = memory = InMemorySpanExporter()
    redactor = _redactor(args)
    tables = ("sessions", "subagents", "turns", "tool_calls", "usage") + (("messages",) if args.content else ())
    loaded = _load(args, "reading sessions", tables)
    sessions = [redact_rows(loaded.sessions[k], redactor) for k in sorted(loaded.sessions)]
    _told_redacted(redactor.counts if redactor is not None else {})
    count = emit_spans(
        sessions, exporter, batch=args.endpoint is not None, service_name=args.service_name, content=args.content
    )
    if memory is not None:
        for line in _tree(list(memory.get_finished_spans())):
            print(line)
    print(f"normalize: {count} spans from {len(sessions)} sessions", file=sys.stderr)
    return _status(len(sessions), loaded.problems)


# --------------------------------------------------------------------------


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "inputs",
        nargs="*",
        metavar="PATH",
        help="files or folders: native captures, session files, normalized JSONL"
        " (default: the agents' own session folders, ~/.claude/projects, ~/.codex/sessions, ~/.gemini/tmp,"
        " ~/.local/share/opencode/opencode.db)",
    )
    p.add_argument("--protocol", "-p", help="read native inputs as this protocol instead of detecting it")
    p.add_argument(
        "--jobs", "-j", type=int, metavar="N", help="worker processes (default: all cores; 1 reads in this process)"
    )


_REDACT_HELP = "scrub API keys, tokens, passwords and private keys from every text (needs the redact extra)"


def add_commands(subparsers: Any) -> None:
    """Add ``stats``, ``export`` and ``otel`` to the CLI's ``add_subparsers()`` object."""
    s = subparsers.add_parser(
        "stats", help="tokens and cost per agent and model, day, week, month, project: sessions, turns, tools"
    )
    _common(s)
    s.add_argument("--json", action="store_true", help="print JSON instead of a table")
    s.add_argument("--by", choices=BY, default="agent-model", help="one line per ... (default: agent and model)")
    s.add_argument("--since", metavar="DAY", help="only usage on or after this day (YYYY-MM-DD, UTC)")
    s.add_argument("--until", metavar="DAY", help="only usage on or before this day (YYYY-MM-DD, UTC)")
    s.add_argument("--project", metavar="PATH|NAME", help="only sessions run in this folder (or under it, or so named)")
    s.set_defaults(func=cmd_stats)

    e = subparsers.add_parser(
        "export", help="sessions -> analytics tables in DuckDB and/or Parquet (incremental: each session once)"
    )
    _common(e)
    e.add_argument("--duckdb", metavar="FILE", help="the DuckDB file to create or add to")
    e.add_argument("--parquet", metavar="DIR", help="the Parquet dataset folder (partitioned by agent and date)")
    e.add_argument(
        "--all", action="store_true", help="read every file again, even those unchanged since the last export"
    )
    e.add_argument("--redact", action="store_true", help=_REDACT_HELP)
    e.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="convert on a dask.distributed cluster: a scheduler address (tcp://HOST:PORT) or local[N] "
        "(N local worker processes); workers must see DIR and local inputs at the same paths, "
        "or read inputs given as URLs (s3://...)",
    )
    e.add_argument(
        "--task-mb", type=float, default=16, metavar="MB", help="with --dask: input megabytes per task (default 16)"
    )
    e.set_defaults(func=cmd_export)

    o = subparsers.add_parser("otel", help="sessions -> OpenTelemetry traces (GenAI semantic conventions)")
    _common(o)
    o.add_argument(
        "--endpoint",
        metavar="URL",
        help="send over OTLP/HTTP, e.g. http://localhost:4318/v1/traces (default: print the span tree)",
    )
    o.add_argument("--service-name", default="normalize", help="the resource's service.name (default normalize)")
    o.add_argument(
        "--content",
        action="store_true",
        help="put the prompts and replies on the spans (gen_ai.input.messages / gen_ai.output.messages); "
        "off by default: they hold what was written",
    )
    o.add_argument("--redact", action="store_true", help=_REDACT_HELP)
    o.set_defaults(func=cmd_otel)
