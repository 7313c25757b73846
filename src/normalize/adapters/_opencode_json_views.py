"""The wire views of the ``opencode-json`` adapter (:mod:`normalize.adapters.opencode_json`): the
msgspec Structs its lines decode into, and their decoders.

Apart from the adapter so that the adapter can be compiled (the compiled build,
docs/performance.md): a msgspec Struct defined in a mypyc-compiled module decodes
wrongly, so the Structs stay in this interpreted module.

The views are ``gc=False`` where they hold decoded plain data only: no reference cycles,
so the cycle collector need not track them.
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
