"""The analytics commands of the ``normalize`` CLI: ``stats``, ``export``, ``otel``.

:func:`add_commands` adds them to the main parser's subparsers; each sets
``func`` to a function taking the parsed arguments and returning the exit
code (0 done, 1 some input could not be read, 2 misuse), like the other
commands.  duckdb, pyarrow, rich and OpenTelemetry are imported only when a
command runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from normalize import UsageError, available

from ._load import Loaded, Scan, load
from ._stats import Line, Summary, summarize

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


def _inputs(args: argparse.Namespace) -> list[Path]:
    """The paths given, or, with none, every registered agent's default session folders that exist."""
    if args.inputs:
        return [Path(p) for p in args.inputs]
    found = [
        path
        for cls in available().values()
        for default in cls.default_paths
        if (path := Path(default).expanduser()).exists()
    ]
    if not found:
        raise UsageError("no path given, and none of the agents' session folders exists (see normalize adapters)")
    return sorted(set(found))


def _load(args: argparse.Namespace, label: str, tables: tuple[str, ...]) -> Loaded:
    with _progress(label) as progress:
        loaded = load(_inputs(args), protocol=args.protocol, jobs=_jobs(args), progress=progress, tables=tables)
    _tell(loaded.problems)
    return loaded


def _tell(problems: list[str]) -> None:
    for problem in problems:
        print(f"normalize: skipped: {problem}", file=sys.stderr)


def _status(found: int, problems: list[str]) -> int:
    if not found:
        print("normalize: no session found in the input", file=sys.stderr)
        return 1
    return 1 if problems else 0


# --------------------------------------------------------------------------
# stats


def _fmt_int(n: int) -> str:
    return f"{n:,}"


def _cats(line: Line) -> str:
    return " ".join(f"{k}:{v}" for k, v in sorted(line.tool_categories.items())) or "-"


def _approvals(line: Line) -> str:
    return " ".join(f"{k}:{v}" for k, v in sorted(line.approvals.items())) or "-"


def render_stats(summary: Summary, out: TextIO, *, width: int | None = None) -> None:
    """The summary as a rich table."""
    if importlib.util.find_spec("rich") is None:
        raise UsageError("the stats table needs rich: pip install 'normalize[analytics]' (or use --json)")
    from rich.console import Console
    from rich.table import Table

    table = Table(title="normalize stats", show_lines=False)
    for name, justify in (
        ("agent", "left"),
        ("model", "left"),
        ("sessions", "right"),
        ("turns", "right"),
        ("tool calls", "right"),
        ("by category", "left"),
        ("approvals", "left"),
        ("errors", "right"),
        ("input", "right"),
        ("output", "right"),
        ("cache read", "right"),
        ("cache write", "right"),
        ("cost USD", "right"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]

    def add(line: Line, style: str | None = None) -> None:
        sessions = str(line.sessions) + (f" (+{line.subagents} sub)" if line.subagents else "")
        cost = f"{line.cost:.4f}" + ("*" if line.sessions_without_cost else "")
        table.add_row(
            line.agent,
            line.model or "-",
            sessions,
            _fmt_int(line.turns),
            _fmt_int(line.tool_calls),
            _cats(line),
            _approvals(line),
            _fmt_int(line.errors),
            _fmt_int(line.tokens["input_tokens"]),
            _fmt_int(line.tokens["output_tokens"]),
            _fmt_int(line.tokens["cache_read_tokens"]),
            _fmt_int(line.tokens["cache_write_tokens"]),
            cost,
            style=style,
        )

    for line in summary.sorted_lines():
        add(line)
    if len(summary.lines) > 1:
        table.add_section()
        add(summary.total(), style="bold")
    console = Console(file=out, width=width or (None if out.isatty() else 240))
    console.print(table)
    if any(line.sessions_without_cost for line in summary.lines.values()):
        console.print("* some sessions report no cost; their tokens are counted, their cost is not")


def cmd_stats(args: argparse.Namespace) -> int:
    loaded = _load(args, "reading sessions", ("sessions", "tool_calls", "permissions"))
    summary = summarize(loaded.sessions[k] for k in sorted(loaded.sessions))
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
    stores: dict[str, DuckDBStore | ParquetStore] = {}
    if args.duckdb is not None:
        stores["duckdb"] = DuckDBStore(Path(args.duckdb))
    if args.parquet is not None:
        stores["parquet"] = ParquetStore(Path(args.parquet))
    found = 0
    try:
        with _progress("converting sessions") as progress:
            scan = Scan(_inputs(args), protocol=args.protocol, jobs=_jobs(args), progress=progress)
            # each session goes to the stores as soon as its worker is done: memory is the stores' buffers
            for rows in scan:
                found += 1
                for store in stores.values():
                    store.offer(rows)
        for store in stores.values():
            store.flush()
    finally:
        duck = stores.get("duckdb")
        if isinstance(duck, DuckDBStore):
            duck.close()
    _tell(scan.problems)
    for target, store in stores.items():
        r = store.result
        print(
            f"normalize: {target}: {r.added} added, {r.replaced} replaced, {r.skipped} already there",
            file=sys.stderr,
        )
    return _status(found, scan.problems)


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
            lines.append(f"{'  ' * depth}{s.name}  [{ms:.0f} ms]")
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
            raise UsageError("this needs the OpenTelemetry SDK: pip install 'normalize[otel]'") from None
        exporter = memory = InMemorySpanExporter()
    loaded = _load(args, "reading sessions", ("sessions", "turns", "tool_calls"))
    sessions = [loaded.sessions[k] for k in sorted(loaded.sessions)]
    count = emit_spans(sessions, exporter, batch=args.endpoint is not None, service_name=args.service_name)
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


def add_commands(subparsers: Any) -> None:
    """Add ``stats``, ``export`` and ``otel`` to the CLI's ``add_subparsers()`` object."""
    s = subparsers.add_parser(
        "stats", help="totals per agent and model: sessions, turns, tools, approvals, tokens, cost"
    )
    _common(s)
    s.add_argument("--json", action="store_true", help="print JSON instead of a table")
    s.set_defaults(func=cmd_stats)

    e = subparsers.add_parser(
        "export", help="sessions -> analytics tables in DuckDB and/or Parquet (incremental: each session once)"
    )
    _common(e)
    e.add_argument("--duckdb", metavar="FILE", help="the DuckDB file to create or add to")
    e.add_argument("--parquet", metavar="DIR", help="the Parquet dataset folder (partitioned by agent and date)")
    e.set_defaults(func=cmd_export)

    o = subparsers.add_parser("otel", help="sessions -> OpenTelemetry traces (GenAI semantic conventions)")
    _common(o)
    o.add_argument(
        "--endpoint",
        metavar="URL",
        help="send over OTLP/HTTP, e.g. http://localhost:4318/v1/traces (default: print the span tree)",
    )
    o.add_argument("--service-name", default="normalize", help="the resource's service.name (default normalize)")
    o.set_defaults(func=cmd_otel)
