"""normalize: the native event streams of AI coding agents as one typed event model.

The public API is what this module exports; everything else is private.
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from ._codec import SCHEMA_VERSION, StreamHeader, decode, encode, to_builtins
from ._connection import Connection
from ._contract import Adapter, Direction, Emit, InTurn, Item, Passthrough, Problem, Routing, Sample, Source
from ._convert import SessionInput, events, find_inputs, iter_records, read_records
from ._errors import (
    DetectionError,
    InputError,
    LineTooLong,
    MalformedMessage,
    NormalizeError,
    NotASession,
    ProtocolViolation,
    TruncatedLine,
    UnreadableInput,
    UsageError,
)
from ._lifecycle import Calls, OpenCall, tokens_plus, tokens_since
from ._lines import DEFAULT_MAX_LINE, CaptureParser, LineProblem, LineSplitter, Message, Record
from ._model import *  # noqa: F403 - the model's own __all__

# the spec's names, kept; not in __all__ (a star import brings WarningBody and ErrorBody instead)
from ._model import Error as Error
from ._model import Warning as Warning  # noqa: A004
from ._model import __all__ as _model_all
from ._registry import adapter_class, available, detect_protocol, register, unregister
from ._session import Clock, Session, format_ts, session_id_for
from ._version import __version__, compiled_modules

if _TYPE_CHECKING:
    from ._aio import ByteSource, EventStream, aevents
    from ._drive import (
        AgentExited,
        AgentNotFound,
        AgentRequestFailed,
        AuthenticationRequired,
        DriveBackend,
        DriveError,
        DriveOptions,
        DriveSession,
        ImageData,
        NotSupported,
        TurnRunning,
        UnknownRequest,
        drive,
    )
    from ._follow import FileChanged, follow
    from ._redact import Redactor
    from ._replay import Pacer, replay
    from ._tap import AgentTap, Wiretap, exit_status, relay, tap, tap_line

# The async and live parts need anyio, and the redactor compiles its rules; they are imported
# on first use, so that ``import normalize`` stays fast for the synchronous, batch and
# analytics uses.
_LAZY = {
    "ByteSource": "_aio",
    "EventStream": "_aio",
    "aevents": "_aio",
    "FileChanged": "_follow",
    "follow": "_follow",
    "Pacer": "_replay",
    "Redactor": "_redact",
    "replay": "_replay",
    "AgentTap": "_tap",
    "Wiretap": "_tap",
    "exit_status": "_tap",
    "relay": "_tap",
    "tap": "_tap",
    "tap_line": "_tap",
    "AgentExited": "_drive",
    "AgentNotFound": "_drive",
    "AgentRequestFailed": "_drive",
    "AuthenticationRequired": "_drive",
    "DriveBackend": "_drive",
    "DriveError": "_drive",
    "DriveOptions": "_drive",
    "DriveSession": "_drive",
    "ImageData": "_drive",
    "NotSupported": "_drive",
    "TurnRunning": "_drive",
    "UnknownRequest": "_drive",
    "drive": "_drive",
}


def __getattr__(name: str) -> _Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'normalize' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"normalize.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "AgentExited",
    "AgentNotFound",
    "AgentRequestFailed",
    "AuthenticationRequired",
    "DriveBackend",
    "DriveError",
    "DriveOptions",
    "DriveSession",
    "ImageData",
    "NotSupported",
    "TurnRunning",
    "UnknownRequest",
    "drive",
    "DEFAULT_MAX_LINE",
    "SCHEMA_VERSION",
    "Adapter",
    "AgentTap",
    "ByteSource",
    "Calls",
    "CaptureParser",
    "Clock",
    "compiled_modules",
    "Connection",
    "DetectionError",
    "Direction",
    "Emit",
    "EventStream",
    "FileChanged",
    "InTurn",
    "InputError",
    "Item",
    "LineProblem",
    "LineSplitter",
    "LineTooLong",
    "MalformedMessage",
    "Message",
    "NormalizeError",
    "NotASession",
    "OpenCall",
    "Pacer",
    "Passthrough",
    "Problem",
    "Routing",
    "ProtocolViolation",
    "Record",
    "Redactor",
    "Sample",
    "Session",
    "SessionInput",
    "Source",
    "StreamHeader",
    "TruncatedLine",
    "UnreadableInput",
    "UsageError",
    "Wiretap",
    "__version__",
    "adapter_class",
    "aevents",
    "available",
    "decode",
    "detect_protocol",
    "encode",
    "events",
    "exit_status",
    "find_inputs",
    "follow",
    "format_ts",
    "iter_records",
    "read_records",
    "session_id_for",
    "register",
    "relay",
    "replay",
    "tap",
    "tap_line",
    "to_builtins",
    "tokens_plus",
    "tokens_since",
    "unregister",
    *_model_all,
]
