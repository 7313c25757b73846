"""The wire views of the ``hm-json`` adapter, :mod:`normalize.adapters.hm_json`:
the msgspec Structs its lines decode into, and their decoders; a module apart,
interpreted in the compiled build (docs/adapters.md).
"""

from __future__ import annotations

import msgspec
from msgspec import Raw, Struct

#: An absent field kept as Raw (msgspec cannot put Raw in a union); distinct from ``null``.
ABSENT = Raw(b"")


def _raw_or_none(value: Raw) -> Raw | None:
    data = bytes(value)
    return None if data in (b"", b"null") else value


class _Image(Struct, frozen=True, gc=False):
    media_type: str | None = None
    data: str | None = None
    width: int | None = None
    height: int | None = None


class _Usage(Struct, frozen=True, gc=False):
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0


class _Line(Struct, frozen=True, gc=False):
    """Every agent line type's fields in one view; each handler reads its own.

    ``input`` is a tool call's input (any JSON) or a usage line's token count, so it is Raw.
    """

    type: str
    session: str = ""
    time: str | None = None
    # session_start
    root: str | None = None
    mode: str | None = None
    provider: str | None = None
    model: str | None = None
    resumed: bool | None = None
    # message_end, text_delta, thinking_delta, retry, error, warning, question, compaction_end
    role: str | None = None
    text: str | None = None
    images: list[_Image] | None = None
    # tool_call, tool_result, approval_needed, approval, blocked, question
    tool: str | None = None
    call_id: str | None = None
    summary: str | None = None
    input: Raw = ABSENT
    category: str | None = None
    paths: list[str] | None = None
    command: str | None = None  # approval_needed's command; response's command name
    reason: str | None = None
    note: str | None = None
    allow: bool | None = None
    is_error: bool | None = None
    # usage
    output: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None
    cost: float | None = None
    # turn_end, subagent_end, response
    error: str | None = None
    # session_end
    exit_code: int | None = None
    refused: list[str] | None = None
    usage: _Usage | None = None
    # response
    id: Raw = ABSENT
    ok: bool | None = None
    data: Raw = ABSENT


class _Head(Struct, frozen=True, gc=False):
    type: str = ""
    v: int | None = None
    session: str | None = None


class _Command(Struct, frozen=True, gc=False):
    """A client command (``--rpc`` stdin); only the fields normalize interprets."""

    type: str = ""
    id: Raw = ABSENT
    text: str | None = None
    call_id: str | None = None
    allow: bool | None = None
    for_session: bool | None = None
    note: str | None = None
    edits: Raw = ABSENT
    mode: str | None = None
    provider: str | None = None
    model: str | None = None
    effort: str | None = None


class _ToolInput(Struct, frozen=True, gc=False):
    path: str | None = None
    description: str | None = None
    prompt: str | None = None
    background: bool | None = None
    old_text: str | None = None
    new_text: str | None = None
    content: str | None = None


class _SessionData(Struct, frozen=True, gc=False):
    id: str | None = None
    title: str | None = None
    root: str | None = None
    model: str | None = None
    context: int | None = None
    usage: _Usage | None = None


class _StateData(Struct, frozen=True, gc=False):
    session: _SessionData | None = None


_line_decoder = msgspec.json.Decoder(_Line)
_head_decoder = msgspec.json.Decoder(_Head)
_command_decoder = msgspec.json.Decoder(_Command)
_input_decoder = msgspec.json.Decoder(_ToolInput)
_state_decoder = msgspec.json.Decoder(_StateData)
_session_data_decoder = msgspec.json.Decoder(_SessionData)
_int_decoder = msgspec.json.Decoder(int)
_any_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()
