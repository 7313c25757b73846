"""The wire views of the ``gemini-chat`` adapter, :mod:`normalize.adapters.gemini_chat`:
the msgspec Structs its lines decode into, and their decoders; a module apart,
interpreted in the compiled build (docs/adapters.md).
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import Struct, field


class _Thought(Struct, frozen=True, gc=False):
    subject: str = ""
    description: str = ""


class _Tokens(Struct, frozen=True, gc=False):
    input: int | None = None
    output: int | None = None
    cached: int | None = None
    thoughts: int | None = None
    total: int | None = None


class _Call(Struct, frozen=True, gc=False):
    id: str
    name: str = ""
    args: Any = None
    status: str | None = None
    resultDisplay: Any = None


class _Part(Struct, frozen=True, gc=False):
    text: str | None = None


class _Said(Struct, frozen=True, gc=False):
    """A message of ``$set.messages``: only its id matters."""

    id: str | None = None


class _Set(Struct, frozen=True, gc=False):
    messages: list[_Said] | None = None


class _Line(Struct, frozen=True, gc=False):
    # the header
    sessionId: str | None = None
    startTime: str | None = None
    projectHash: str | None = None
    kind: str | None = None
    # a record
    id: str | None = None
    timestamp: str | None = None
    type: str | None = None
    content: list[_Part] | str | None = None
    thoughts: list[_Thought] | None = None
    tokens: _Tokens | None = None
    model: str | None = None
    toolCalls: list[_Call] | None = None
    # an update
    set: _Set | None = field(default=None, name="$set")


_decoder = msgspec.json.Decoder(_Line)
