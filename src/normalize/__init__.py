"""normalize: the native event streams of AI coding agents as one typed event model.

The public API is what this module exports; everything else is private.
"""

from ._aio import ByteSource, EventStream, aevents
from ._codec import SCHEMA_VERSION, StreamHeader, decode, encode
from ._contract import Adapter, Direction, Emit, Item, Passthrough, Problem, Sample, Source
from ._convert import SessionInput, events, find_inputs, iter_records, read_records
from ._errors import (
    DetectionError,
    InputError,
    LineTooLong,
    MalformedMessage,
    NormalizeError,
    ProtocolViolation,
    TruncatedLine,
    UsageError,
)
from ._follow import FileChanged, follow
from ._lines import DEFAULT_MAX_LINE, CaptureParser, LineProblem, LineSplitter, Message, Record
from ._model import *  # noqa: F403 - the model's own __all__
from ._model import __all__ as _model_all
from ._registry import adapter_class, available, detect_protocol, register, unregister
from ._replay import Pacer, replay
from ._session import Clock, Session, format_ts
from ._tap import AgentTap, Wiretap, exit_status, relay, tap, tap_line
from ._version import __version__

__all__ = [
    "DEFAULT_MAX_LINE",
    "SCHEMA_VERSION",
    "Adapter",
    "AgentTap",
    "ByteSource",
    "CaptureParser",
    "Clock",
    "DetectionError",
    "Direction",
    "Emit",
    "EventStream",
    "FileChanged",
    "InputError",
    "Item",
    "LineProblem",
    "LineSplitter",
    "LineTooLong",
    "MalformedMessage",
    "Message",
    "NormalizeError",
    "Pacer",
    "Passthrough",
    "Problem",
    "ProtocolViolation",
    "Record",
    "Sample",
    "Session",
    "SessionInput",
    "Source",
    "StreamHeader",
    "TruncatedLine",
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
    "register",
    "relay",
    "replay",
    "tap",
    "tap_line",
    "unregister",
    *_model_all,
]
