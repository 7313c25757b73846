"""Secret redaction: scrub values shaped like credentials from normalized lines.

Redaction works on the encoded JSON line, bodies and native payloads alike,
before it is written anywhere.  Every pattern matches inside one JSON string
only (it never spans a quote), and every replacement is plain text
(``[REDACTED:kind]``), so the structure of an event never changes: the same
keys, the same nesting, the same number of events.

What counts as a secret (each with the kind name reported):

* provider API keys by their published shapes: ``anthropic-key`` (sk-ant-...),
  ``openai-key`` (sk-..., sk-proj-...), ``aws-access-key`` (AKIA...),
  ``github-token`` (ghp_..., github_pat_...), ``google-api-key`` (AIza...),
  ``slack-token`` (xox?-...);
* ``bearer-token``: the credential after ``Bearer`` (an Authorization header);
* ``private-key``: a PEM private key block;
* ``env-secret``: the value of an environment variable whose name ends in
  ``KEY``, ``TOKEN``, ``SECRET`` or ``PASSWORD``, whether written as a JSON
  member (``"OPENAI_API_KEY": "..."``) or a shell assignment (``FOO_TOKEN=...``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

__all__ = ["Redactor"]

# Characters a secret may contain inside a JSON string: no quote, no backslash, no space.
_V = rb'[^"\\\s]'

#: (kind, pattern); the group named ``s`` is the secret, the rest of a match is kept.
_PATTERNS: list[tuple[str, re.Pattern[bytes]]] = [
    ("private-key", re.compile(
        rb"(?P<s>-----BEGIN [A-Z ]*PRIVATE KEY-----(?:[^\"\\]|\\[^\"])*?-----END [A-Z ]*PRIVATE KEY-----)"
    )),
    ("anthropic-key", re.compile(rb"(?<![A-Za-z0-9_\-])(?P<s>sk-ant-[A-Za-z0-9_\-]{20,})")),
    ("openai-key", re.compile(rb"(?<![A-Za-z0-9_\-])(?P<s>sk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,})")),
    ("aws-access-key", re.compile(rb"\b(?P<s>(?:AKIA|ASIA)[0-9A-Z]{16})\b")),
    ("github-token", re.compile(rb"\b(?P<s>gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})")),
    ("google-api-key", re.compile(rb"\b(?P<s>AIza[0-9A-Za-z_\-]{35})")),
    ("slack-token", re.compile(rb"\b(?P<s>xox[abprs]-[A-Za-z0-9\-]{10,})")),
    ("bearer-token", re.compile(rb"[Bb]earer (?P<s>" + _V + rb"{8,})")),
    # "NAME_KEY": "value" as a JSON member (the value is the whole string)
    ("env-secret", re.compile(rb'"[A-Za-z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD)" ?: ?"(?P<s>[^"\\]+)"')),
    # NAME_TOKEN=value in a command line or an env dump
    ("env-secret", re.compile(rb"(?<![A-Za-z0-9_])[A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD)=(?P<s>" + _V + rb"{4,})")),
]  # fmt: skip

_ALREADY = re.compile(rb"^\[REDACTED:[a-z\-]+\]$")


class Redactor:
    """Scrubs secrets from encoded lines and counts what it removed, by kind."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def redact(self, line: bytes) -> bytes:
        """The line with every secret replaced by ``[REDACTED:kind]``."""
        for kind, pattern in _PATTERNS:
            line = pattern.sub(self._replacer(kind), line)
        return line

    def _replacer(self, kind: str) -> Callable[[re.Match[bytes]], bytes]:
        mark = b"[REDACTED:" + kind.encode() + b"]"

        def sub(m: re.Match[bytes]) -> bytes:
            whole, start, end = m.group(0), m.start("s") - m.start(0), m.end("s") - m.start(0)
            if _ALREADY.match(whole[start:end]):
                return whole
            self.counts[kind] += 1
            return whole[:start] + mark + whole[end:]

        return sub

    def summary(self) -> str:
        """What was removed, e.g. ``2 anthropic-key, 1 bearer-token`` (empty when nothing)."""
        return ", ".join(f"{n} {kind}" for kind, n in sorted(self.counts.items()))
