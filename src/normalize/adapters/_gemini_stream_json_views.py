"""The wire views of the ``gemini-stream-json`` adapter, :mod:`normalize.adapters.gemini_stream_json`:
the msgspec Structs its lines decode into, and their decoders; a module apart,
interpreted in the compiled build (docs/adapters.md).
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import Struct


class _ErrorInfo(Struct, frozen=True, gc=False):
    type: str | None = None
    message: str = ""


class _Stats(Struct, frozen=True, gc=False):
    total_tokens: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached: int | None = None


class _Line(Struct, frozen=True, gc=False):
    type: str
    timestamp: str | None = None
    session_id: str | None = None
    model: str | None = None
    role: str | None = None
    content: str | None = None
    delta: bool = False
    tool_name: str | None = None
    tool_id: str | None = None
    parameters: Any = None
    status: str | None = None
    output: str | None = None
    error: _ErrorInfo | None = None
    severity: str | None = None
    message: str | None = None
    stats: _Stats | None = None


class _Head(Struct, frozen=True, gc=False):
    type: str
    timestamp: str | None = None


_decoder = msgspec.json.Decoder(_Line)


_head_decoder = msgspec.json.Decoder(_Head)
