"""The wire views of the ``opencode-json`` adapter, :mod:`normalize.adapters.opencode_json`:
the msgspec Structs its lines decode into, and their decoders; a module apart,
interpreted in the compiled build (docs/adapters.md).
"""

from __future__ import annotations

import msgspec
from msgspec import Struct

from normalize.adapters import _opencode_parts as op


class _ErrorData(Struct, frozen=True, gc=False):
    message: str | None = None


class _Error(Struct, frozen=True, gc=False):
    name: str | None = None
    data: _ErrorData | None = None


class _Line(Struct, frozen=True, gc=False):
    type: str
    timestamp: int | None = None
    sessionID: str | None = None
    part: op.Part | None = None
    error: _Error | None = None


class _Head(Struct, frozen=True, gc=False):
    type: str
    sessionID: str | None = None


_decoder = msgspec.json.Decoder(_Line)


_head_decoder = msgspec.json.Decoder(_Head)
