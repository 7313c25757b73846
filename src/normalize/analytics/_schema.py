"""The analytics tables: names, columns and types, versioned.

One definition, used by every writer (DuckDB, Parquet, ``stats --json``) and
documented in ``docs/analytics.md``.  ``ANALYTICS_SCHEMA_VERSION`` changes when
a column changes meaning or goes away; new columns and tables may appear
without it.

Column types are the library's own names, mapped once per writer:
``str``, ``int``, ``float``, ``bool``, ``ts`` (a UTC instant; rows hold the
RFC 3339 text the events carry).
"""

from __future__ import annotations

from typing import Literal

__all__ = ["ANALYTICS_SCHEMA_VERSION", "TABLES", "TOKEN_COLUMNS", "ColumnType", "column_names"]

#: The version of the analytics tables; stored in every ``sessions`` row.
ANALYTICS_SCHEMA_VERSION = "2"

ColumnType = Literal["str", "int", "float", "bool", "ts"]

#: Token and cost columns, shared by ``sessions``, ``turns`` and ``usage``.
#: ``input_tokens`` includes the cached reads and writes; ``uncached_input_tokens`` is the rest.
TOKEN_COLUMNS: tuple[tuple[str, ColumnType], ...] = (
    ("input_tokens", "int"),
    ("uncached_input_tokens", "int"),
    ("output_tokens", "int"),
    ("cache_read_tokens", "int"),
    ("cache_write_tokens", "int"),
    ("reasoning_tokens", "int"),
    ("total_tokens", "int"),
    ("cost", "float"),
    ("currency", "str"),
    ("cost_source", "str"),
)

TABLES: dict[str, tuple[tuple[str, ColumnType], ...]] = {
    "sessions": (
        ("session_key", "str"),
        ("root_key", "str"),
        ("agent", "str"),
        ("agent_version", "str"),
        ("protocol", "str"),
        ("native_session_id", "str"),
        ("fork_of", "str"),
        ("model", "str"),
        ("cwd", "str"),
        ("title", "str"),
        ("origin", "str"),
        ("started_at", "ts"),
        ("ended_at", "ts"),
        ("duration_ms", "float"),
        ("status", "str"),
        ("turns", "int"),
        ("tool_calls", "int"),
        ("errors", "int"),
        ("events", "int"),
        *TOKEN_COLUMNS,
        ("usage_basis", "str"),
        ("source", "str"),
        ("schema_version", "str"),
    ),
    "subagents": (
        ("session_key", "str"),
        ("root_key", "str"),
        ("parent_key", "str"),
        ("subagent_id", "str"),
        ("spawn_call_id", "str"),
        ("turn_key", "str"),
        ("agent", "str"),
        ("model", "str"),
        ("name", "str"),
        ("started_at", "ts"),
        ("ended_at", "ts"),
        ("duration_ms", "float"),
        ("status", "str"),
        ("tool_calls", "int"),
        ("errors", "int"),
        ("events", "int"),
        *TOKEN_COLUMNS,
        ("usage_basis", "str"),
    ),
    "turns": (
        ("turn_key", "str"),
        ("session_key", "str"),
        ("root_key", "str"),
        ("ordinal", "int"),
        ("native_turn_id", "str"),
        ("origin", "str"),
        ("started_at", "ts"),
        ("ended_at", "ts"),
        ("duration_ms", "float"),
        ("end_reason", "str"),
        ("stop_reason", "str"),
        ("native_stop_reason", "str"),
        ("tool_calls", "int"),
        ("errors", "int"),
        *TOKEN_COLUMNS,
        ("usage_basis", "str"),
    ),
    "tool_calls": (
        ("call_key", "str"),
        ("session_key", "str"),
        ("root_key", "str"),
        ("turn_key", "str"),
        ("subagent_id", "str"),
        ("call_id", "str"),
        ("kind", "str"),
        ("tool", "str"),
        ("server", "str"),
        ("category", "str"),
        ("title", "str"),
        ("started_at", "ts"),
        ("ended_at", "ts"),
        ("duration_ms", "float"),
        ("status", "str"),
        ("exit_code", "int"),
        ("permission", "str"),
        ("decision", "str"),
    ),
    "permissions": (
        ("permission_key", "str"),
        ("session_key", "str"),
        ("root_key", "str"),
        ("turn_key", "str"),
        ("subagent_id", "str"),
        ("request_id", "str"),
        ("call_id", "str"),
        ("tool", "str"),
        ("category", "str"),
        ("mode", "str"),
        ("requested_at", "ts"),
        ("resolved_at", "ts"),
        ("latency_ms", "float"),
        ("outcome", "str"),
        ("decision", "str"),
        ("scope", "str"),
        ("option_id", "str"),
    ),
    "usage": (
        ("usage_key", "str"),
        ("session_key", "str"),
        ("root_key", "str"),
        ("turn_key", "str"),
        ("subagent_id", "str"),
        ("agent", "str"),
        ("model", "str"),
        ("scope", "str"),
        ("basis", "str"),
        ("rule", "str"),
        ("ts", "ts"),
        *TOKEN_COLUMNS,
    ),
    "errors": (
        ("error_key", "str"),
        ("session_key", "str"),
        ("root_key", "str"),
        ("turn_key", "str"),
        ("subagent_id", "str"),
        ("ts", "ts"),
        ("source", "str"),
        ("error_type", "str"),
        ("message", "str"),
        ("recoverable", "bool"),
    ),
    "events": (
        ("event_key", "str"),
        ("session_key", "str"),
        ("root_key", "str"),
        ("turn_key", "str"),
        ("subagent_id", "str"),
        ("seq", "int"),
        ("ts", "ts"),
        ("turn_id", "str"),
        ("kind", "str"),
        ("origin", "str"),
        ("protocol", "str"),
        ("method", "str"),
    ),
}


def column_names(table: str) -> tuple[str, ...]:
    return tuple(name for name, _ in TABLES[table])
