"""Text from the input, made safe to print on a terminal.

Session files and agent streams are untrusted: a model name, a file path, a
native type name or an error message can hold escape sequences that a terminal
would obey (``ESC ] 0 ;`` sets the window title, ``ESC [ 2 J`` clears the
screen, ``ESC ] 8 ;`` makes a link, a C1 ``CSI`` byte does the same in one
character), or bidirectional-override characters that reorder what is shown.
Every value that came from the input goes through :func:`printable` before the
command line shows it to a person.  JSON written to a terminal goes through
:func:`json_for_terminal`, which escapes what JSON itself leaves raw (C1 controls,
bidirectional marks); JSON written to a file or a pipe is left as it is.

What is escaped, each as a visible Python-style escape (``\\x1b``, ``\\x9b``,
``\\u202e``): the C0 controls (including tab, newline and carriage return: a
value is always shown on one line), DEL, the C1 controls, the line and paragraph
separators, and the bidirectional embedding, override and isolate marks.  A
backslash is left as it is, so a Windows path reads as written.
"""

from __future__ import annotations

import re

__all__ = ["json_for_terminal", "printable"]

_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f"  # C0, DEL, C1
    "\u2028\u2029"  # line and paragraph separators
    "\u200e\u200f\u061c"  # directional marks
    "\u202a-\u202e\u2066-\u2069"  # bidirectional embeddings, overrides, isolates
    "]"
)


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(value: object) -> str:
    """``str(value)`` with every terminal control character shown as an escape."""
    text = value if isinstance(value, str) else str(value)
    return _UNSAFE.sub(_escape, text)


#: the same characters in UTF-8 JSON text: JSON escapes C0 itself, not DEL, C1, the separators or bidi marks
_UNSAFE_UTF8 = re.compile(
    rb"\x7f|\xc2[\x80-\x9f]"  # DEL, C1
    rb"|\xe2\x80[\x8e\x8f\xa8-\xae]"  # directional marks, line/paragraph separators, embeddings, overrides
    rb"|\xe2\x81[\xa6-\xa9]"  # isolates
    rb"|\xd8\x9c"  # Arabic letter mark
)


def _escape_utf8(m: re.Match[bytes]) -> bytes:
    return b"\\u%04x" % ord(m.group().decode())


def json_for_terminal(text: bytes) -> bytes:
    """A JSON text with the controls JSON leaves raw written as ``\\uXXXX`` escapes: the same JSON value.

    For JSON printed to a terminal (``convert`` or ``tap --events`` without a file,
    ``doctor --json``): JSON escapes the C0 controls (ESC among them) itself, but
    writes DEL, the C1 controls and bidirectional marks as they are.  Outside
    strings JSON has none of these characters, so each escape lands inside a
    string, where it means the same character.
    """
    return _UNSAFE_UTF8.sub(_escape_utf8, text)
