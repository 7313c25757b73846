"""The wire views of the ``claude-transcript`` adapter, :mod:`normalize.adapters.claude_transcript`:
the msgspec Structs its lines decode into, and their decoders; a module apart,
interpreted in the compiled build (docs/adapters.md).
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import Raw, Struct

from normalize.adapters._claude_common import (
    NULL,
    ContentBlock,
    PermissionDecision,
)
from normalize.adapters._claude_common import Usage as UsageView


class _Message(Struct, frozen=True, gc=False):
    id: str | None = None
    model: str | None = None
    content: str | list[ContentBlock] | None = None
    stop_reason: str | None = None
    usage: Raw = NULL


class _Origin(Struct, frozen=True, gc=False):
    kind: str | None = None


class _ModelUsage(Struct, frozen=True, gc=False):
    inputTokens: int = 0
    outputTokens: int = 0
    cacheReadInputTokens: int = 0
    cacheCreationInputTokens: int = 0


class _Line(Struct, frozen=True, gc=False):
    type: str = ""
    subtype: str | None = None
    uuid: str | None = None
    parentUuid: str | None = None
    isSidechain: bool = False
    agentId: str | None = None
    sessionId: str | None = None
    timestamp: str | None = None
    cwd: str | None = None
    version: str | None = None
    permissionMode: str | None = None
    message: _Message | None = None
    apiBlockIndex: int | None = None
    toolUseResult: Raw = NULL
    toolEndsTurn: bool = False
    toolDenialKind: str | None = None
    permissionDecision: PermissionDecision | None = None
    isMeta: bool = False
    isCompactSummary: bool = False
    isApiErrorMessage: bool = False
    apiErrorType: str | None = None
    error: Raw = NULL
    origin: _Origin | None = None
    retryAttempt: int | None = None
    maxRetries: int | None = None
    # bookkeeping lines
    summary: str | None = None
    customTitle: str | None = None
    aiTitle: str | None = None
    totalCostUSD: float | None = None
    modelUsage: dict[str, _ModelUsage] | None = None


class _Attachment(Struct, frozen=True, gc=False):
    type: str = ""
    addedNames: list[str] | None = None
    removedNames: list[str] | None = None


class _AttachedLine(_Line, frozen=True, gc=False):
    """A line with its attachment read in the same pass (an object as :class:`_Attachment`, any
    other JSON value as it is; absent: None).  An object whose fields are of other types
    fails the line, which is then read as :class:`_RawAttachmentLine`."""

    attachment: _Attachment | str | int | float | bool | list[Any] | None = None


class _RawAttachmentLine(_Line, frozen=True, gc=False):
    """A line whose attachment the one-pass view cannot hold (a number out of range in it):
    the attachment's bytes, read on their own as before."""

    attachment: Raw = NULL


class _ApiError(Struct, frozen=True, gc=False):
    formatted: str | None = None
    message: str | None = None


class _Sniff(Struct, frozen=True, gc=False):
    type: object = None
    sessionId: object = None
    session_id: object = None
    uuid: object = None
    parentUuid: object = "absent"
    leafUuid: object = None


#: An attachment line's method and handler read its attachment: decoded with the line.  Where
#: that view fails and a view that skips the attachment's bytes does not (a field of another
#: type, ``1e400`` in it), the line is read as before (the attachment decoded apart, an
#: unreadable one read as no attachment).
_LINE = msgspec.json.Decoder(_AttachedLine)


_RAW_ATTACHMENT_LINE = msgspec.json.Decoder(_RawAttachmentLine)


class _Time(Struct, frozen=True, gc=False):
    timestamp: str | None = None


_TIME = msgspec.json.Decoder(_Time)


_USAGE = msgspec.json.Decoder(UsageView)


_API_ERROR = msgspec.json.Decoder(_ApiError)


#: an API error line's ``error`` category (a string there; an object on ``system/api_error``)
_ERROR_KIND = msgspec.json.Decoder(str)


_ATTACHMENT = msgspec.json.Decoder(_Attachment)


_SNIFF = msgspec.json.Decoder(_Sniff)


class _Prompt(Struct):
    """The note on a sub-agent call (``Adapter.calls``): its prompt, until a sidechain claims the call."""

    text: str | None
