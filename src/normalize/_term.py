"""Text from the input, made safe to print on a terminal.

Session files and agent streams are untrusted: a model name, a file path, a
native type name or an error message can hold escape sequences that a terminal
would obey (``ESC ] 0 ;`` sets the window title, ``ESC [ 2 J`` clears the
screen, ``ESC ] 8 ;`` makes a link, a C1 ``CSI`` byte does the same in one
character), or bidirectional-override characters that reorder what is shown.
Every value that came from the input goes through :func:`printable` before the
command line shows it to a person; the JSON outputs (``--json``, the normalized
streams) are left alone, since JSON escapes control characters itself.

What is escaped, each as a visible Python-style escape (``\\x1b``, ``\\x9b``,
``\\u202e``): the C0 controls (including tab, newline and carriage return: a
value is always shown on one line), DEL, the C1 controls, the line and paragraph
separators, and the bidirectional embedding, override and isolate marks.  A
backslash is left as it is, so a Windows path reads as written.
"""

from __future__ import annotations

import re

__all__ = ["printable"]

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
