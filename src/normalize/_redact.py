"""Secret redaction: scrub values shaped like credentials from normalized lines.

Redaction reads every JSON string of an encoded line, decoded (so a JSON escape
hides nothing: ``\\"DB_PASSWORD\\": \\"...\\"`` inside a tool output, a ``\\u``
escape, a native payload, a malformed line kept as text all read as the text they
are), finds the secrets in it, and writes back only the strings that changed, each
secret replaced by ``[REDACTED:kind]``.  The structure of an event never changes
(the same keys, the same nesting, the same number of events) and a string without
a secret keeps its exact bytes.

What counts as a secret (each with the kind name reported):

* every token shape of `detect-secrets <https://github.com/Yelp/detect-secrets>`_'s
  plugins (AWS keys, GitHub and GitLab tokens, Slack, Stripe ``sk_live_``, JWTs,
  passwords in URLs (``basic-auth-credentials``), npm, PyPI, SendGrid, Twilio,
  Azure, Discord, Telegram, ...), kind = the plugin's secret type in lower case;
  and its keyword rules (``secret-keyword``: ``password: ...``, ``api_key = "..."``
  in the syntaxes of a dozen languages and config formats).  Its entropy and
  public-IP plugins are left out: they flag every id and address;
* what those miss, as normalize's own rules: ``anthropic-key`` (sk-ant-...),
  ``openai-key`` (sk-..., sk-proj-...), ``google-api-key`` (AIza...),
  ``bearer-token`` (an Authorization header's credential), ``private-key`` (the
  whole PEM block, or from ``BEGIN`` to the end when it is cut off), ``netrc-password``
  (``machine HOST login USER password PASS``, on one line or several), and ``env-secret``: the value given
  to a name ending in ``key``, ``token``, ``secret``, ``password``, ``passwd``,
  ``pwd`` or ``credentials`` (any case), as a JSON member at any depth, an
  assignment ``NAME=value``, ``NAME = "va lue"``, ``NAME: value`` (YAML) or
  ``NAME='value'`` (``.env``, shell), quoted with any level of JSON escaping.

Streamed text (``assistant-delta``, ``reasoning-delta``, ``command-output``) can cut
a secret in two.  :meth:`Redactor.feed` holds each delta back until
:attr:`Redactor.window` more characters of the same stream have arrived (or any
other event comes), and looks for secrets across the pieces, so a secret of up to
``window`` characters split over any number of deltas is removed from each piece
(the marker in the piece where it starts, nothing in the rest).  Longer secrets
cut across deltas, and the body of a PEM key whose ``BEGIN`` line was in an
earlier piece, are not: the complete message event still has them removed.
"""

from __future__ import annotations

import re
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ._errors import UsageError

__all__ = ["Redactor", "summary_of"]

#: How many characters of a streamed text :meth:`Redactor.feed` waits for after a
#: delta before it lets the delta go: the longest secret it can find split across
#: pieces.  API keys and JWTs are well under it; live output lags by this much.
WINDOW = 256

#: How many streams (messages, reasoning blocks, command outputs) keep their
#: context for :meth:`Redactor.feed`; older ones are forgotten.
STREAMS = 64

# ------------------------------------------------------------------ the rules

#: A secret-bearing name: ends in one of these words (``monkey`` and ``max_tokens`` do not).
_NAME = (
    r"[A-Za-z0-9_.\-]*?(?:api[_\-]?key|access[_\-]?key|secret[_\-]?key|private[_\-]?key|auth[_\-]?key"
    r"|[_\-.]key|token|secret|passw(?:or)?d|pwd|credentials?)"
)
_NAME_ONLY = re.compile(rf"(?i){_NAME}")

#: own rules: (kind, pattern, whole text or line by line); the group ``s`` (or ``b``) is the secret
_OWN: list[tuple[str, re.Pattern[str], bool]] = [
    ("private-key", re.compile(
        r"(?P<s>-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*\Z))",
        re.DOTALL,
    ), True),
    ("anthropic-key", re.compile(r"(?<![A-Za-z0-9_\-])(?P<s>sk-ant-[A-Za-z0-9_\-]{20,})"), False),
    ("openai-key", re.compile(r"(?<![A-Za-z0-9_\-])(?P<s>sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,})"), False),
    ("google-api-key", re.compile(r"(?<![A-Za-z0-9_\-])(?P<s>AIza[0-9A-Za-z_\-]{35})"), False),
    ("bearer-token", re.compile(r"(?i)\bbearer\s+(?P<s>[A-Za-z0-9\-._~+/]{8,}=*)"), False),
    ("bearer-token", re.compile(
        r"(?i)\bauthorization(?:\\*[\"'`])?\s*[:=]\s*(?:\\*[\"'`])?(?:basic|token|bearer)?\s*(?P<s>[A-Za-z0-9\-._~+/]{8,}=*)"
    ), False),
    ("env-secret", re.compile(
        rf"(?i)(?<![A-Za-z0-9_.\-]){_NAME}(?:\\*[\"'`])?[ \t]*(?:=>|:=|=|:)[ \t]*"
        r"(?:(?P<q>\\*[\"'`])(?P<s>[^\n]+?)(?P=q)|(?P<b>[^\s\"'`\\,;]+))"
    ), False),
    ("netrc-password", re.compile(
        r"(?is)(?:\b(?:machine|default)\b.{0,300}?|\blogin\s+\S+\s+)\bpassword\s+(?P<s>[^\s\"'`\\]+)"
    ), True),
]  # fmt: skip

#: detect-secrets plugins whose first group is a prefix (``ghp``), not the secret
_PREFIX_GROUP = {"GitHubTokenDetector", "GitLabTokenDetector"}
_LEFT_OUT = {"IPPublicDetector", "Base64HighEntropyString", "HexHighEntropyString", "KeywordDetector"}
_JWT_TAIL = re.compile(r"[A-Za-z0-9\-_.+/=]*")
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-]*")
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


#: a text without any of these words holds no ``name = value`` secret: the keyword
#: rules (the slowest, by far) are only tried on a text that has one
_WORDS = re.compile(r"(?i)key|token|secret|passw|pwd|_pw|_pass|credential|contras")
_AUTH = re.compile(r"(?i)bearer|authorization")
_AWS = re.compile(r"(?i)aws")
_LOWER_TWIN = {gate: re.compile(gate.pattern.removeprefix("(?i)").lower()) for gate in (_WORDS, _AUTH, _AWS)}
#: every token shape is at least this long a run of token characters (real keys are far longer)
_LONG = re.compile(r"[A-Za-z0-9_\-+/=]{16,}")
_URL = re.compile(r"://")
_PEM = re.compile(r"PRIVATE KEY|PuTTY")
_NPM = re.compile(r"_authToken")
#: the gate of each detect-secrets plugin that is not a token shape
_PLUGIN_GATES = {
    "BasicAuthDetector": _URL,
    "PrivateKeyDetector": _PEM,
    "NpmDetector": _NPM,
    "ArtifactoryDetector": re.compile(r"AKC|AP[0-9A-F]"),
    "MailchimpDetector": re.compile(r"-us[0-9]"),
    "CloudantDetector": _WORDS,
    "IbmCloudIamDetector": _WORDS,
    "IbmCosHmacDetector": _WORDS,
    "SoftlayerDetector": _WORDS,
}


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    whole: bool  # may span lines (a PEM block); others end at the end of a line
    group: Callable[[re.Match[str]], tuple[int, int] | None]
    gate: re.Pattern[str]  # tried only on the lines where this is found


def _named(m: re.Match[str]) -> tuple[int, int] | None:
    for name in ("s", "b"):
        if m.group(name) is not None:
            return m.span(name)
    return None  # pragma: no cover - every own pattern has s or b


def _trimmed(m: re.Match[str]) -> tuple[int, int] | None:
    """Group 0 without the delimiters some plugins match around the secret, to the end of its token.

    (A plugin pattern with a fixed length, ``ghp_`` and 36 characters, would leave
    the rest of a longer token in place.)
    """
    s, e = m.span()
    text = m.string
    while s < e and text[s] in " \t=:\"'":
        s += 1
    while e > s and text[e - 1] in " \t\"'":
        e -= 1
    if e > s and text[e - 1] in _TOKEN_CHARS:
        tail = _TOKEN_TAIL.match(text, e)
        e = tail.end() if tail is not None else e
    return (s, e) if e > s else None


def _first_group(m: re.Match[str]) -> tuple[int, int] | None:
    for i in range(1, (m.re.groups or 0) + 1):
        if m.group(i):
            return m.span(i)
    return _trimmed(m)


def _jwt(m: re.Match[str]) -> tuple[int, int] | None:
    # the plugin's signature part is lazy, so its match stops before the signature
    tail = _JWT_TAIL.match(m.string, m.end())
    return (m.start(), tail.end() if tail is not None else m.end())


def _keyword_value(group: int) -> Callable[[re.Match[str]], tuple[int, int] | None]:
    """The value of a keyword rule's match; unquoted, up to the first space (the rule would take the line)."""

    def pick(m: re.Match[str]) -> tuple[int, int] | None:
        if not m.group(group):
            return None
        s, e = m.span(group)
        if s == 0 or m.string[s - 1] not in "\"'`":
            space = _SPACE.search(m.string, s, e)
            e = space.start() if space is not None else e
        return s, e

    return pick


def _kind(secret_type: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-")


def _rules() -> list[_Rule]:
    """The own rules and detect-secrets' plugins, in the order that names an overlap."""
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.plugins import keyword
        from detect_secrets.plugins.base import RegexBasedDetector
    except ImportError:
        raise UsageError(
            "redaction needs detect-secrets: pip install 'agent-normalize[redact]' (or pip install detect-secrets)"
        ) from None
    sk = re.compile(r"sk-")
    gates = {
        "env-secret": _WORDS,
        "netrc-password": _WORDS,
        "bearer-token": _AUTH,
        "private-key": _PEM,
        "anthropic-key": sk,
        "openai-key": sk,
        "google-api-key": re.compile(r"AIza"),
    }
    own = [_Rule(kind, pattern, whole, _named, gates.get(kind, _LONG)) for kind, pattern, whole in _OWN]
    plugins: list[_Rule] = []
    classes: list[Any] = sorted(get_mapping_from_secret_type_to_class().values(), key=lambda c: c.__name__)
    for cls in classes:
        if cls.__name__ in _LEFT_OUT or not issubclass(cls, RegexBasedDetector):
            continue
        kind = _kind(cls.secret_type)
        for pattern in cls.denylist:
            if cls.__name__ == "JwtTokenDetector":
                pick = _jwt
            elif cls.__name__ in _PREFIX_GROUP or not pattern.groups:
                pick = _trimmed
            else:
                pick = _first_group
            gate = _PLUGIN_GATES.get(cls.__name__, _LONG)
            if cls.__name__ == "AWSKeyDetector" and pattern.groups:
                gate = _AWS
            if "slack" in pattern.pattern:
                gate = _URL
            plugins.append(_Rule(kind, pattern, False, pick, gate))
    keywords: dict[re.Pattern[str], int] = {}
    for table in (*keyword.REGEX_BY_FILETYPE.values(), keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP):
        keywords.update(table)
    words = [
        _Rule("secret-keyword", pattern, False, _keyword_value(group), _WORDS) for pattern, group in keywords.items()
    ]
    # the specific shapes first: an overlap is named after the first rule that matched it
    shapes = {"private-key", "anthropic-key", "openai-key", "google-api-key"}
    return [r for r in own if r.kind in shapes] + plugins + [r for r in own if r.kind not in shapes] + words


_rules_cache: list[_Rule] | None = None


def _all_rules() -> list[_Rule]:
    global _rules_cache
    if _rules_cache is None:
        _rules_cache = _rules()
    return _rules_cache


_MARKER = re.compile(r"\[REDACTED:[a-z0-9\-]+\]")
_NEWLINE = re.compile(r"[\n\r]")
_SPACE = re.compile(r"\s")


_Groups = list[tuple[re.Pattern[str], bool, list[tuple[int, _Rule]]]]
_groups_of: dict[int, tuple[list[_Rule], _Groups]] = {}


def _groups(rules: list[_Rule]) -> _Groups:
    """The rules by gate, each with its rank in ``rules``: a gate not found skips its whole group."""
    known = _groups_of.get(id(rules))
    if known is not None and known[0] is rules:
        return known[1]
    by: dict[tuple[re.Pattern[str], bool], list[tuple[int, _Rule]]] = {}
    for rank, rule in enumerate(rules):
        by.setdefault((rule.gate, rule.whole), []).append((rank, rule))
    groups = [(g, w, members) for (g, w), members in by.items()]
    if len(_groups_of) > 8:
        _groups_of.clear()
    _groups_of[id(rules)] = (rules, groups)
    return groups


def _lines_with(word: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    """The lines of ``text`` (start, end) where ``word`` is found."""
    out: list[tuple[int, int]] = []
    m = word.search(text)
    while m is not None:
        start = max(text.rfind("\n", 0, m.start()), text.rfind("\r", 0, m.start())) + 1
        nl = _NEWLINE.search(text, m.end())
        end = nl.start() if nl is not None else len(text)
        out.append((start, end))
        m = word.search(text, end)
    return out


def _find(text: str, rules: list[_Rule]) -> list[tuple[int, int, str]]:
    """The secrets in ``text``: non-overlapping ``(start, end, kind)``, in order, markers left alone."""
    found: list[tuple[int, int, int]] = []  # start, end, rule rank
    lines: dict[re.Pattern[str], list[tuple[int, int]]] = {}
    lower = text.lower()
    if len(lower) != len(text):  # a few characters change length in lower case: keep the offsets
        lower = text
    for gate, whole, members in _groups(rules):
        where = lines.get(gate)
        if where is None:
            # a case-insensitive gate is searched, faster, as its lower-case twin in the lower-cased text
            twin = _LOWER_TWIN.get(gate)
            if twin is not None and lower is not text:
                where = lines[gate] = _lines_with(twin, lower)
            else:
                where = lines[gate] = _lines_with(gate, text)
        if whole and where:
            where = [(0, len(text))]
        for pos, endpos in where:
            for rank, rule in members:
                for m in rule.pattern.finditer(text, pos, endpos):
                    span = rule.group(m)
                    if span is None:
                        continue
                    s, e = span
                    if not whole:  # a secret ends with its line (keyword values run up to a quote)
                        nl = _NEWLINE.search(text, s, e)
                        e = nl.start() if nl is not None else e
                    if e > s:
                        found.append((s, e, rank))
    if not found:
        return []
    done = [(m.start(), m.end()) for m in _MARKER.finditer(text)]
    found.sort()
    merged: list[list[int]] = []
    for s, e, rank in found:
        if merged and s < merged[-1][1]:
            last = merged[-1]
            last[1] = max(last[1], e)
            last[2] = min(last[2], rank)
        else:
            merged.append([s, e, rank])
    out = []
    for s, e, rank in merged:
        if any(ds <= s and e <= de for ds, de in done):
            continue  # already redacted
        out.append((s, e, rules[rank].kind))
    return out


# ------------------------------------------------------------------ JSON strings

#: one JSON string token; outside strings a JSON text has no quote, so scanning from the start finds them all
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_COLON = re.compile(rb"\s*:")
_str_decoder = msgspec.json.Decoder(str)
_encoder = msgspec.json.Encoder()

#: a string shorter than this holds neither a token nor a ``name=value``
_SHORTEST = 8


def _strings(line: bytes) -> Iterator[tuple[int, int, bool]]:
    """Each JSON string token of ``line``: start, end, and whether it is a member name."""
    for m in _STRING.finditer(line):
        yield m.start(), m.end(), _COLON.match(line, m.end()) is not None


# ------------------------------------------------------------------ streamed deltas


class _DeltaEvent(msgspec.Struct, rename="camel"):
    session_id: str = ""
    kind: str = ""
    message_id: str | None = None
    reasoning_id: str | None = None
    call_id: str | None = None
    stream: str | None = None
    text: str | None = None
    delta: str | None = None


class _DeltaLine(msgspec.Struct):
    type: str
    event: _DeltaEvent


_delta_decoder = msgspec.json.Decoder(_DeltaLine)
_DELTA_KINDS = (b'"kind":"assistant-delta"', b'"kind":"reasoning-delta"', b'"kind":"command-output"')


def summary_of(counts: Mapping[str, int]) -> str:
    """Secrets removed, by kind, as the commands report them: ``2 anthropic-key, 1 bearer-token``."""
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))


@dataclass
class _Held:
    line: bytes
    piece: str
    start: int  # offset of the piece in its stream's text


@dataclass
class _Stream:
    released: int = 0  # offset of the first character not yet let go
    context: str = ""  # the last WINDOW characters let go, as they were
    spans: list[list[Any]] = field(default_factory=list)  # [start, end, kind, marked] in stream offsets


class Redactor:
    """Scrubs secrets from encoded lines and counts what it removed, by kind.

    :meth:`redact` works on one line; :meth:`feed` and :meth:`flush` on a stream
    of lines, holding deltas back to find a secret cut across them.  Needs
    detect-secrets (the ``redact`` extra); without it the constructor raises
    :class:`~normalize.UsageError`.
    """

    def __init__(self, *, window: int = WINDOW) -> None:
        self.counts: Counter[str] = Counter()
        self.window = window
        self._rules = _all_rules()
        self._held: list[_Held] = []
        self._held_key: tuple[str, ...] | None = None
        self._streams: OrderedDict[tuple[str, ...], _Stream] = OrderedDict()

    # -------------------------------------------------------------- text and lines

    def redact_text(self, text: str) -> str:
        """``text`` with every secret replaced by ``[REDACTED:kind]``."""
        if len(text) < _SHORTEST:
            return text
        return self._apply(text, [(s, e, f"[REDACTED:{kind}]", kind) for s, e, kind in _find(text, self._rules)])

    def _apply(self, text: str, edits: list[tuple[int, int, str, str | None]]) -> str:
        out, last = [], 0
        for s, e, replacement, kind in edits:
            out.append(text[last:s])
            out.append(replacement)
            last = e
            if kind is not None:
                self.counts[kind] += 1
        out.append(text[last:])
        return "".join(out)

    def redact(self, line: bytes) -> bytes:
        """One encoded JSON line with every secret in its strings replaced; other bytes unchanged."""
        out: list[bytes] = []
        last = 0
        secret_name = False
        name_end = 0
        for start, end, is_name in _strings(line):
            token = line[start:end]
            if is_name:
                secret_name = end - start > 4 and _NAME_ONLY.fullmatch(_str_decoder.decode(token)) is not None
                name_end = end
                continue
            follows_name = secret_name and line[name_end:start].strip() == b":"
            secret_name = False
            if follows_name:
                text = _str_decoder.decode(token)
                if not text or _MARKER.fullmatch(text):
                    continue
                self.counts["env-secret"] += 1
                new = "[REDACTED:env-secret]"
            elif end - start < _SHORTEST + 2:
                continue
            else:
                text = _str_decoder.decode(token)
                new = self.redact_text(text)
                if new == text:
                    continue
            out.append(line[last:start])
            out.append(_encoder.encode(new))
            last = end
        if not out:
            return line
        out.append(line[last:])
        return b"".join(out)

    # -------------------------------------------------------------- streams

    def feed(self, line: bytes) -> list[bytes]:
        """The redacted lines ready to write after ``line``, in input order (deltas may wait)."""
        delta = self._delta(line)
        out: list[bytes] = []
        if delta is None:
            out.extend(self.flush())
            out.append(self.redact(line))
            return out
        key, piece = delta
        if self._held_key is not None and key != self._held_key:
            out.extend(self.flush())
        stream = self._streams.get(key)
        if stream is None:
            stream = self._streams[key] = _Stream()
            while len(self._streams) > STREAMS:
                self._streams.popitem(last=False)
        else:
            self._streams.move_to_end(key)
        start = self._held[-1].start + len(self._held[-1].piece) if self._held else stream.released
        self._held.append(_Held(line, piece, start))
        self._held_key = key
        while self._held and sum(len(h.piece) for h in self._held[1:]) >= self.window:
            out.append(self._release(stream))
        return out

    def flush(self) -> list[bytes]:
        """Every line still held back (at the end of a stream, or before a line of another kind)."""
        if self._held_key is None:
            return []
        stream = self._streams.get(self._held_key)
        out = [self._release(stream) if stream is not None else self.redact(h.line) for h in list(self._held)]
        self._held = []
        self._held_key = None
        return out

    def _delta(self, line: bytes) -> tuple[tuple[str, ...], str] | None:
        if not any(k in line for k in _DELTA_KINDS):
            return None
        try:
            ev = _delta_decoder.decode(line).event
        except msgspec.DecodeError:
            return None
        piece = ev.text if ev.text is not None else ev.delta
        if ev.kind == "assistant-delta" and ev.message_id is not None and piece is not None:
            return (ev.session_id, ev.kind, ev.message_id), piece
        if ev.kind == "reasoning-delta" and ev.reasoning_id is not None and piece is not None:
            return (ev.session_id, ev.kind, ev.reasoning_id), piece
        if ev.kind == "command-output" and ev.call_id is not None and piece is not None:
            return (ev.session_id, ev.kind, ev.call_id, ev.stream or ""), piece
        return None

    def _release(self, stream: _Stream) -> bytes:
        """Let the first held delta go, with what the text around it shows redacted."""
        front = self._held.pop(0)
        text = stream.context + front.piece + "".join(h.piece for h in self._held)
        base = front.start - len(stream.context)
        lo, hi = front.start, front.start + len(front.piece)
        for s, e, kind in _find(text, self._rules):
            s, e = s + base, e + base
            if e <= lo:
                continue  # wholly in text already let go
            for known in stream.spans:
                if s < known[1] and known[0] < e:  # the same secret seen again, maybe longer now
                    known[0], known[1] = min(known[0], s), max(known[1], e)
                    break
            else:
                stream.spans.append([s, e, kind, False])
        edits: list[tuple[int, int, str, str | None]] = []
        for known in sorted(stream.spans):
            s, e = max(known[0], lo), min(known[1], hi)
            if s >= e:
                continue
            if known[3]:
                edits.append((s - lo, e - lo, "", None))
            else:
                known[3] = True
                edits.append((s - lo, e - lo, f"[REDACTED:{known[2]}]", str(known[2])))
        line = front.line
        if edits:
            line = self._replace_piece(line, front.piece, self._apply(front.piece, edits))
        stream.released = hi
        stream.context = (stream.context + front.piece)[-self.window :]
        stream.spans = [k for k in stream.spans if k[1] > hi]
        return self.redact(line)

    @staticmethod
    def _replace_piece(line: bytes, old: str, new: str) -> bytes:
        """``line`` with each string whose value is the delta's text (the body's and the native one) replaced."""
        out: list[bytes] = []
        last = 0
        encoded = _encoder.encode(new)
        for start, end, is_name in _strings(line):
            if is_name or _str_decoder.decode(line[start:end]) != old:
                continue
            out.append(line[last:start])
            out.append(encoded)
            last = end
        out.append(line[last:])
        return b"".join(out)

    def summary(self) -> str:
        """What was removed, e.g. ``2 anthropic-key, 1 bearer-token`` (empty when nothing)."""
        return summary_of(self.counts)
