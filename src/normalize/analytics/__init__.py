"""Analytics over normalized events: tables, DuckDB/Parquet export, OpenTelemetry traces.

A consumer of normalized events only: it reads what :mod:`normalize` gives
(native files through :func:`normalize.events`, normalized JSONL through
:func:`normalize.decode`) and never an adapter.  The tables are documented in
``docs/analytics.md``; duckdb, pyarrow and the OpenTelemetry SDK are optional
(extras ``analytics``, ``otel``, ``otlp``) and imported only when used; ``stats``
needs only the base install (rich draws its table, genai-prices prices the usage
an agent reports no cost for).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ._load import InputSpec, Loaded, Scan, discover, load, read_input
from ._schema import ANALYTICS_SCHEMA_VERSION, TABLES, column_names
from ._stats import Line, Summary, summarize
from ._tables import UNKNOWN_TS, SessionRows, TableBuilder, key_of, session_key, tables_of, unknown_clock

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

__all__ = [
    "ANALYTICS_SCHEMA_VERSION",
    "TABLES",
    "UNKNOWN_TS",
    "InputSpec",
    "Line",
    "Loaded",
    "Scan",
    "SessionRows",
    "Summary",
    "TableBuilder",
    "column_names",
    "discover",
    "export_duckdb",
    "export_parquet",
    "key_of",
    "load",
    "read_input",
    "session_key",
    "summarize",
    "tables_of",
    "to_otel",
    "unknown_clock",
]


def _rows(sessions: Loaded | Iterable[SessionRows]) -> list[SessionRows]:
    if isinstance(sessions, Loaded):
        return [sessions.sessions[k] for k in sorted(sessions.sessions)]
    return list(sessions)


def export_duckdb(sessions: Loaded | Iterable[SessionRows], path: str | Path) -> dict[str, int]:
    """Add sessions to a DuckDB file (created if absent); returns counts added, replaced, skipped."""
    from ._store import DuckDBStore

    store = DuckDBStore(Path(path))
    try:
        return store.write_all(_rows(sessions)).as_json()
    finally:
        store.close()


def export_parquet(sessions: Loaded | Iterable[SessionRows], folder: str | Path) -> dict[str, int]:
    """Add sessions to a Parquet dataset folder; returns counts added, replaced, skipped."""
    from ._store import ParquetStore

    return ParquetStore(Path(folder)).write_all(_rows(sessions)).as_json()


def to_otel(
    sessions: Loaded | Iterable[SessionRows], exporter: SpanExporter, *, batch: bool = False, content: bool = False
) -> int:
    """Send sessions as OpenTelemetry spans to ``exporter``; returns the number of spans.

    ``content`` puts the prompts and replies on the spans; they must have been loaded
    (``load(..., tables=[..., "messages"])``).
    """
    from ._otel import emit_spans

    return emit_spans(_rows(sessions), exporter, batch=batch, content=content)
