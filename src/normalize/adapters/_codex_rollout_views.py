"""The wire views of the ``codex-rollout`` adapter, :mod:`normalize.adapters.codex_rollout`:
the msgspec Structs its lines decode into, and their decoders; a module apart,
interpreted in the compiled build (docs/adapters.md).
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import Raw, Struct

from normalize.adapters import _codex_items as ci


class _Line(Struct, frozen=True, gc=False):
    """The envelope; older files put a bare response item (or a state line) here."""

    type: str | None = None
    timestamp: str | None = None
    payload: Raw = ci.NULL
    # the oldest, envelope-less files
    record_type: str | None = None
    id: str | None = None
    instructions: str | None = None


class _Text(Struct, frozen=True, gc=False):
    type: str = ""
    text: str | None = None


class _Instructions(Struct, frozen=True, gc=False):
    text: Raw = ci.NULL  # a JSON string, read by the adapter's TextMemo (the same in every session)


class _ThreadSpawn(Struct, frozen=True, gc=False):
    parent_thread_id: str | None = None


class _SubAgentSource(Struct, frozen=True, gc=False):
    thread_spawn: _ThreadSpawn | None = None


class _Source(Struct, frozen=True, gc=False):
    """``source`` when it is not a plain string (``exec``, ``vscode``): a sub-agent's,
    ``{"subagent": "review" | {"thread_spawn": {parent_thread_id, depth, ...}} | ...}``."""

    subagent: str | _SubAgentSource | None = None


_SOURCE: msgspec.json.Decoder[_Source] = msgspec.json.Decoder(_Source)


class _Meta(Struct, frozen=True, gc=False):
    id: str | None = None
    timestamp: str | None = None
    cwd: str | None = None
    cli_version: str | None = None
    model_provider: str | None = None
    originator: str | None = None
    base_instructions: _Instructions | None = None
    instructions: Raw = ci.NULL  # as _Instructions.text
    parent_thread_id: str | None = None  # a sub-agent's thread (0.171, multi_agent)
    source: Raw = ci.NULL  # 0.96 names a sub-agent's parent only here

    @property
    def parent(self) -> str | None:
        """The thread that spawned this one (a sub-agent's), or None."""
        if self.parent_thread_id:
            return self.parent_thread_id
        if self.source is ci.NULL or not bytes(self.source).startswith(b"{"):
            return None  # a plain source ("exec", "vscode") or none
        try:
            source = _SOURCE.decode(self.source)
        except msgspec.DecodeError:
            return None  # a shape this version of the reader does not know: no parent
        sub = source.subagent
        spawn = sub.thread_spawn if isinstance(sub, _SubAgentSource) else None
        return spawn.parent_thread_id if spawn is not None and spawn.parent_thread_id else None


class _CollabMode(Struct, frozen=True, gc=False):
    mode: str | None = None


class _TurnContext(Struct, frozen=True, gc=False):
    cwd: str | None = None
    model: str | None = None
    approval_policy: Raw = ci.NULL
    sandbox_policy: Raw = ci.NULL
    collaboration_mode: _CollabMode | None = None


class _RItem(Struct, frozen=True, gc=False):
    """A response item (every type's fields in one view)."""

    type: str
    id: str | None = None
    role: str | None = None
    content: list[_Text] | None = None
    summary: list[_Text] | None = None
    name: str | None = None
    namespace: str | None = None
    arguments: Raw = ci.NULL
    call_id: str | None = None
    output: Raw = ci.NULL
    input: str | None = None
    status: str | None = None
    action: Raw = ci.NULL


class _PathChange(Struct, frozen=True, gc=False):
    type: str | None = None
    unified_diff: str | None = None
    content: str | None = None
    move_path: str | None = None


class _Duration(Struct, frozen=True, gc=False):
    secs: int = 0
    nanos: int = 0


class _CoreItem(Struct, frozen=True, gc=False):
    """A core TurnItem of ``item_completed`` (PascalCase ``type``)."""

    type: str
    id: str = ""
    content: list[_Text] | None = None
    phase: str | None = None
    summary_text: list[str] | None = None
    raw_content: list[str] | None = None
    command: list[str] | str | None = None
    cwd: str | None = None
    status: str | None = None
    aggregated_output: str | None = None
    exit_code: int | None = None
    changes: dict[str, _PathChange] | None = None
    server: str | None = None
    tool: str | None = None
    arguments: Raw = ci.NULL
    result: Raw = ci.NULL
    error: Raw = ci.NULL
    query: str | None = None
    duration: _Duration | None = None
    # SubAgentActivity (0.171, multi_agent_v2)
    kind: str | None = None
    agent_thread_id: str | None = None
    agent_path: str | None = None
    model: str | None = None


class _TaskError(Struct, frozen=True, gc=False):
    message: str = ""
    codex_error_info: Raw = ci.NULL


class _Tok(Struct, frozen=True, gc=False):
    input_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_input_tokens: int | None = None
    output_tokens: int = 0
    reasoning_output_tokens: int = 0
    total_tokens: int = 0


class _TokenInfo(Struct, frozen=True, gc=False):
    total_token_usage: _Tok | None = None
    last_token_usage: _Tok | None = None
    model_context_window: int | None = None


class _Invocation(Struct, frozen=True, gc=False):
    server: str = ""
    tool: str = ""
    arguments: Raw = ci.NULL


class _Event(Struct, frozen=True, gc=False):
    """An ``event_msg`` payload (every type's fields in one view)."""

    type: str
    turn_id: str | None = None
    message: str | None = None
    text: str | None = None
    images: list[str] | None = None
    error: _TaskError | str | None = None
    reason: str | None = None
    info: _TokenInfo | None = None
    item: _CoreItem | None = None
    call_id: str | None = None
    command: list[str] | None = None
    aggregated_output: str | None = None
    stdout: str | None = None
    exit_code: int | None = None
    changes: dict[str, Raw] | None = None
    success: bool | None = None
    invocation: _Invocation | None = None
    result: Raw = ci.NULL
    query: str | None = None
    # ``sub_agent_activity`` (0.142; 0.171 stores a ``SubAgentActivity`` item instead)
    event_id: str | None = None
    kind: str | None = None
    agent_thread_id: str | None = None
    agent_path: str | None = None
    # ``token_count`` up to about 0.2x: the last request's usage, flat
    input_tokens: int | None = None
    cached_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_output_tokens: int = 0
    total_tokens: int = 0


#: An ``event_msg`` payload, for a view that decodes one within its own line (the older
#: ``codex exec --json`` shape's ``msg``); see :meth:`CodexRolloutAdapter.feed_event`.
Event = _Event


class _Compacted(Struct, frozen=True, gc=False):
    message: str | None = None


_line_decoder = msgspec.json.Decoder(_Line)


# The enveloped lines of the types the adapter translates, one view each, as a tagged union
# on the envelope's ``type``: such a line is decoded once, its payload with it.  A line no
# view reads (another type, a null or malformed payload, an envelope-less line) is read
# again as before, envelope first (``_Line``, its payload kept raw), so that what it gives,
# an error included, is unchanged.


class _Enveloped(Struct, frozen=True, kw_only=True, gc=False, tag_field="type"):
    """The envelope's fields, as ``_Line`` checks them."""

    timestamp: str | None = None
    record_type: str | None = None
    id: str | None = None
    instructions: str | None = None


class _MetaLine(_Enveloped, frozen=True, kw_only=True, gc=False, tag="session_meta"):
    payload: _Meta


class _ContextLine(_Enveloped, frozen=True, kw_only=True, gc=False, tag="turn_context"):
    payload: _TurnContext


class _ItemLine(_Enveloped, frozen=True, kw_only=True, gc=False, tag="response_item"):
    payload: _RItem


class _EventLine(_Enveloped, frozen=True, kw_only=True, gc=False, tag="event_msg"):
    payload: _Event


class _CompactedLine(_Enveloped, frozen=True, kw_only=True, gc=False, tag="compacted"):
    payload: _Compacted


_TypedLine = _MetaLine | _ContextLine | _ItemLine | _EventLine | _CompactedLine
_typed_line_decoder: msgspec.json.Decoder[_TypedLine] = msgspec.json.Decoder(_TypedLine)


_compacted_decoder = msgspec.json.Decoder(_Compacted)


_meta_decoder = msgspec.json.Decoder(_Meta)


_context_decoder = msgspec.json.Decoder(_TurnContext)


_ritem_decoder = msgspec.json.Decoder(_RItem)


_event_decoder = msgspec.json.Decoder(_Event)


_any_decoder = msgspec.json.Decoder()


class _LegacyOutput(Struct, frozen=True):
    """An older output, ``{"output": ..., "metadata": {"exit_code": N}}``."""

    output: Any = None
    metadata: Any = None


_legacy_output_decoder = msgspec.json.Decoder(_LegacyOutput)


class _Command(Struct, frozen=True, kw_only=True):
    """The note of a command: its end (``exec_command_end``, an output) names only its call."""

    command: str | list[str]
    cwd: str | None = None
