"""The library's exceptions.

One base, :class:`NormalizeError`.  :class:`InputError` and its subclasses mean
"the input was bad" (what default mode turns into ``error`` events);
:class:`UsageError` means "the API was misused".  Any other exception escaping
normalize is a bug.
"""

from __future__ import annotations

__all__ = [
    "DetectionError",
    "InputError",
    "LineTooLong",
    "MalformedMessage",
    "NormalizeError",
    "NotASession",
    "ProtocolViolation",
    "TruncatedLine",
    "UnreadableInput",
    "UsageError",
]


class NormalizeError(Exception):
    """Base of every exception normalize raises on purpose."""


class InputError(NormalizeError):
    """The input was bad.  In default mode this becomes an ``error`` event instead.

    ``error_type`` is the stable name written into the event's ``errorType``.
    """

    error_type = "input"

    def __init__(self, message: str, *, kept: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        #: what could be kept of the offending input (text, possibly shortened)
        self.kept = kept


class MalformedMessage(InputError):
    """A line that is not valid JSON, not UTF-8, or not the shape its protocol defines."""

    error_type = "malformed"


class LineTooLong(InputError):
    """A line longer than the reader's bound; its first bytes are kept."""

    error_type = "line-too-long"


class TruncatedLine(InputError):
    """The input ended in the middle of a line."""

    error_type = "truncated"


class ProtocolViolation(InputError):
    """Well-formed messages in an order or combination the protocol does not allow."""

    error_type = "protocol"


class DetectionError(InputError):
    """The protocol of an input could not be determined (or the guess was ambiguous)."""

    error_type = "detection"


class NotASession(DetectionError):
    """A file known not to be a session: normalize's own output (a normalized stream).

    Reported so that a folder holding earlier outputs is read without inventing
    sessions from them; it is a note, not a failure.
    """

    error_type = "not-a-session"


class UnreadableInput(DetectionError):
    """A file that could not be read (permissions, an I/O error); the message names it."""

    error_type = "unreadable"


class UsageError(NormalizeError):
    """The library was used wrongly: feed after close, an unknown protocol name, ..."""
