"""Session views as one self-contained HTML page, and an index page for a folder.

Safe by construction: everything that came from an agent is data.

* Markdown (assistant text, reasoning) goes through markdown-it-py with raw HTML
  disabled; its link check refuses ``javascript:``, ``vbscript:``, ``file:`` and
  ``data:`` links, and images become a text reference (a page never fetches).
* Every other value is escaped with :func:`html.escape` where it is written.
* The page's Content-Security-Policy lets only its own inline style and script
  (by a per-page nonce) run and loads nothing; bar widths are SVG attributes, not
  style attributes, so the policy needs no ``unsafe-inline``.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence
from functools import cache
from html import escape
from importlib import resources
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from .._version import __version__
from ._build import (
    Call,
    Item,
    Notice,
    Permission,
    PlanItem,
    Question,
    SessionView,
    SubagentView,
    Text,
    TurnView,
    UserItem,
)
from ._format import clip, clock, command_of, cost_text, json_text, secs, session_title, text_of, tokens_text

__all__ = ["IndexRow", "render_index", "render_live_page", "render_page", "render_sessions"]

#: A call whose input and output together are shorter than this is shown unfolded.
OPEN_BELOW = 1500

FILTERS = (
    ("user", "prompts"),
    ("assistant", "answers"),
    ("reasoning", "reasoning"),
    ("tool", "tools"),
    ("notice", "errors & notes"),
    ("other", "plans & questions"),
)


def e(value: object) -> str:
    return escape(str(value), quote=True)


# ---------------------------------------------------------------- Markdown


def _image(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    """An image is shown as its alt text and address, never loaded."""
    tok = tokens[idx]
    alt = "".join(t.content for t in tok.children or ())
    src = str(tok.attrGet("src") or "")
    return f'<span class="img-ref">[image: {e(alt)}{" " + e(src) if src else ""}]</span>'


def _link_open(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
    return self.renderToken(tokens, idx, options, env)


@cache
def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.add_render_rule("image", _image)
    md.add_render_rule("link_open", _link_open)
    return md


def markdown(text: str) -> str:
    return str(_markdown().render(text))


# ---------------------------------------------------------------- items


def _diff(text: str) -> str:
    out = []
    for line in text.splitlines():
        cls = ""
        if line.startswith("+") and not line.startswith("+++"):
            cls = "add"
        elif line.startswith("-") and not line.startswith("---"):
            cls = "del"
        elif line.startswith("@@"):
            cls = "hunk"
        out.append(f'<span class="{cls}">{e(line) or " "}</span>' if cls else e(line) + "\n")
    return '<pre class="diff">' + "".join(out) + "</pre>"


def _replay(item: Any) -> str:
    return " replay" if getattr(item, "replay", False) else ""


def _permission(perm: Permission) -> tuple[str, str]:
    """(badge for the summary line, detail block)."""
    outcome = perm.outcome or "pending"
    cls = "auto" if outcome.startswith("auto") else outcome
    badge = f'<span class="badge {e(cls)}" title="approval">approval: {e(outcome)}</span>'
    if perm.request_id is None:
        return badge, ""
    parts = ['<div class="perm"><span class="lbl">approval asked</span>']
    if perm.detail:
        parts.append(f"<div>{e(perm.detail)}</div>")
    if perm.options:
        parts.append("<div>options: " + ", ".join(f"<code>{e(o)}</code>" for o in perm.options) + "</div>")
    wait = f" after {secs(perm.end - perm.start)}" if perm.start is not None and perm.end is not None else ""
    parts.append(f'<div>outcome: <span class="badge {e(cls)}">{e(outcome)}</span>{e(wait)}</div></div>')
    return badge, "".join(parts)


def _call(call: Call, key: str) -> str:
    command = command_of(call.input)
    input_text = "" if call.input is None else (json_text(call.input) if command is None else "")
    output_text = "" if call.output is None else text_of(call.output)
    streamed = "".join(call.stdout)
    size = len(input_text) + len(output_text) + len(streamed) + sum(len(d[1]) for d in call.diffs)
    failed = call.phase == "failed" or (call.exit_code not in (None, 0))
    is_open = size < OPEN_BELOW or failed or call.subagent is not None
    status = call.phase + (f" · exit {call.exit_code}" if call.exit_code is not None else "")
    if call.start is not None and call.end is not None:
        status += f" · {secs(call.end - call.start)}"
    badge, perm_block = _permission(call.permission) if call.permission is not None else ("", "")
    cat = call.category or "other"
    head = (
        f'<span class="cat cat-{e(cat)}">{e(cat)}</span><span class="tool">{e(call.tool)}</span>'
        + (f'<span class="title">{e(call.title)}</span>' if call.title and call.title != call.tool else "")
        + f'<span class="badge {"failed" if failed else e(call.phase)}">{e(status)}</span>{badge}'
    )
    body = []
    if call.description and call.description != call.title:
        body.append(f"<div>{e(call.description)}</div>")
    if call.paths:
        body.append(
            '<div class="lbl">files</div><div>' + ", ".join(f"<code>{e(p)}</code>" for p in call.paths) + "</div>"
        )
    if command is not None:
        body.append(f'<div class="lbl">command</div><pre class="cmd">$ {e(clip(command))}</pre>')
        rest = {
            k: v
            for k, v in call.input.items()
            if k not in ("command", "cmd") and not (k == "description" and v == call.description)
        }
        if rest:
            body.append(f'<div class="lbl">input</div><pre>{e(clip(json_text(rest)))}</pre>')
    elif input_text and input_text != "{}":
        body.append(f'<div class="lbl">input</div><pre>{e(clip(input_text))}</pre>')
    body.append(perm_block)
    if call.subagent is not None:
        body.append(_subagent(call.subagent, key + "s"))
    if streamed and not output_text:  # the streamed output, when the call gave no final one
        body.append(f'<div class="lbl">command output</div><pre class="out">{e(clip(streamed))}</pre>')
    if output_text:
        body.append(f'<div class="lbl">output</div><pre class="out">{e(clip(output_text))}</pre>')
    for path, diff, change in call.diffs:
        label = f"{change} " if change else ""
        body.append(f'<div class="lbl">{e(label)}diff</div><div><code>{e(path)}</code></div>{_diff(diff)}')
    return (
        f'<details class="item call{_replay(call)}" data-kind="tool" data-tool="{e(call.tool)}" data-key="{e(key)}"'
        f"{' open' if is_open else ''}><summary>{head}</summary>{''.join(body)}</details>"
    )


def _subagent(sub: SubagentView, key: str) -> str:
    name = sub.name or "sub-agent"
    head = f'<div class="sub-h">sub-agent {e(name)} <span class="badge {e(sub.phase)}">{e(sub.phase)}</span>'
    if sub.model:
        head += f' <span class="title">{e(sub.model)}</span>'
    head += "</div>"
    parts = [head]
    if sub.description:
        parts.append(f"<div>{e(sub.description)}</div>")
    has_prompt = any(isinstance(i, UserItem) for i in sub.items)
    if sub.prompt and not has_prompt:
        parts.append(f'<div class="item user"><span class="who">task</span>{e(sub.prompt)}</div>')
    parts.append(_items(sub.items, key))
    if sub.result is not None:
        parts.append(f'<div class="lbl">result</div><pre class="out">{e(clip(text_of(sub.result)))}</pre>')
    return f'<div class="subagent" data-kind="subagent">{"".join(parts)}</div>'


def _item(item: Item, key: str) -> str:
    if isinstance(item, UserItem):
        extra = " (queued)" if item.queued else ""
        imgs = f" · {item.images} image(s)" if item.images else ""
        return (
            f'<div class="item user{_replay(item)}" data-kind="user"><span class="who">user{extra}{imgs}</span>'
            f"{e(item.text)}</div>"
        )
    if isinstance(item, Text):
        if item.kind == "assistant":
            return f'<div class="item md assistant{_replay(item)}" data-kind="assistant">{markdown(item.text)}</div>'
        words = len((item.text or item.summary or "").split())
        label = "reasoning (redacted)" if item.redacted and not item.text else f"reasoning · {words} words"
        inner = ""
        if item.summary and item.summary != item.text:
            inner += f'<div class="md">{markdown(item.summary)}</div>'
        if item.text:
            inner += f'<div class="md">{markdown(item.text)}</div>'
        return (
            f'<details class="item reasoning{_replay(item)}" data-kind="reasoning" data-key="{e(key)}">'
            f"<summary>{e(label)}</summary>{inner}</details>"
        )
    if isinstance(item, Call):
        return _call(item, key)
    if isinstance(item, Notice):
        detail = f" ({e(item.detail)})" if item.detail else ""
        return (
            f'<div class="item notice {item.kind}{_replay(item)}" data-kind="{item.kind}">'
            f'<span class="tag">{item.kind}</span>{e(item.message)}{detail}</div>'
        )
    if isinstance(item, PlanItem):
        lis = "".join(f'<li class="{e(s)}">{e(c)} <span class="badge">{e(s)}</span></li>' for s, c in item.entries)
        expl = f"<div>{e(item.explanation)}</div>" if item.explanation else ""
        return (
            f'<div class="item plan{_replay(item)}" data-kind="plan"><div class="lbl">plan</div>{expl}'
            f"<ul>{lis}</ul></div>"
        )
    if isinstance(item, Question):
        qs = "".join(f"<li>{e(q)}</li>" for q in item.questions)
        outcome = item.outcome or "pending"
        answer = f"<pre>{e(clip(text_of(item.answer)))}</pre>" if item.answer is not None else ""
        return (
            f'<div class="item plan{_replay(item)}" data-kind="question"><div class="lbl">question to the user</div>'
            f'<ul>{qs}</ul><div>outcome: <span class="badge {e(outcome)}">{e(outcome)}</span></div>{answer}</div>'
        )
    return _subagent(item, key)


def _items(items: Iterable[Item], key: str) -> str:
    return "".join(_item(it, f"{key}.{i}") for i, it in enumerate(items))


# ---------------------------------------------------------------- sessions


def _anchor(session: SessionView) -> str:
    return "s-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in session.session_id)


def _turn(session: SessionView, turn: TurnView, n: int, anchor: str) -> str:
    if turn.turn_id is None:
        if not turn.items:
            return ""
        title = "outside a turn"
    else:
        title = f"turn {n}"
    meta = []
    if turn.start is not None:
        meta.append(clock(turn.start)[11:19])
    if turn.start is not None and turn.end is not None and turn.turn_id is not None:
        meta.append(secs(turn.end - turn.start))
    usage = " · ".join(x for x in (tokens_text(turn.tokens), cost_text(turn.cost, turn.currency)) if x)
    if usage:
        meta.append(usage)
    badges = ""
    if turn.replay:
        badges += '<span class="badge replay">replayed history</span>'
    if turn.reason == "interrupt":
        badges += '<span class="badge interrupt">interrupted</span>'
    elif turn.turn_id is not None and turn.reason is None:
        badges += '<span class="badge pending">not finished</span>'
    if turn.stop_reason:
        meta.append(f"stop: {turn.stop_reason}")
    tid = f"{anchor}-t{n}" if turn.turn_id is not None else f"{anchor}-pre{n}"
    return (
        f'<section class="turn" id="{e(tid)}"><h3><span>{e(title)}</span>{badges}'
        f'<span class="meta">{e(" · ".join(meta))}</span></h3>{_items(turn.items, tid)}'
        + (f'<div class="usage">usage this turn: {e(usage)}</div>' if usage else "")
        + "</section>"
    )


def _timeline(session: SessionView, anchor: str) -> str:
    spans = [(t, t.end - t.start) for t in session.real_turns if t.start is not None and t.end is not None]
    total = sum(max(0.0, span) for _, span in spans)
    if not spans or total <= 0:
        return '<div class="timeline"><div class="legend">timeline: no times in this input</div></div>'
    width = 1000.0
    rects = []
    x = 0.0
    numbers = {id(t): i for i, t in enumerate(session.real_turns, 1)}
    for t, span in spans:
        w = width * max(0.0, span) / total
        known = sum(t.phases.values())
        tx = x
        n = numbers[id(t)]
        for phase in ("model", "tool", "approval"):
            spent = t.phases.get(phase, 0.0)
            if spent <= 0 or known <= 0:
                continue
            pw = w * spent / known
            tip = f"turn {n}: {phase} {secs(spent)}"
            rects.append(
                f'<a href="#{e(anchor)}-t{n}"><rect class="ph-{phase}" x="{tx:.2f}" y="0" width="{pw:.2f}" height="18">'
                f"<title>{e(tip)}</title></rect></a>"
            )
            tx += pw
        x += w
        if x < width - 0.5:
            rects.append(f'<rect class="ph-sep" x="{x - 0.75:.2f}" y="0" width="1.5" height="18"/>')
    totals = session.phases
    legend = "".join(
        f'<span class="sw ph-{p}"></span>{label} {e(secs(totals.get(p, 0.0)))}'
        for p, label in (("model", "model"), ("tool", "tools"), ("approval", "waiting for approval"))
    )
    return (
        f'<div class="timeline"><svg viewBox="0 0 {width:.0f} 18" preserveAspectRatio="none" role="img" '
        f'aria-label="where the time went">{"".join(rects)}</svg><div class="legend">time in turns:{legend}</div></div>'
    )


def _facts(session: SessionView) -> str:
    agent = session.agent + (f" {session.agent_version}" if session.agent_version else "")
    rows = [
        ("agent", agent or "unknown"),
        ("protocol", session.protocol or ""),
        ("model", session.model or ""),
        ("working directory", session.cwd or ""),
        ("started", clock(session.start)),
        ("duration", secs(session.duration)),
        ("turns", str(len(session.real_turns))),
        ("tokens", tokens_text(session.tokens)),
        ("cost", cost_text(session.cost, session.currency)),
        ("session", session.session_id),
    ]
    if session.parent_id:
        rows.append(("parent session", session.parent_id))
    if session.replayed:
        rows.append(("replayed", f"{session.replayed} of {session.events} events are replayed history"))
    cells = "".join(f"<div><dt>{e(k)}</dt><dd>{e(v) if v else '—'}</dd></div>" for k, v in rows)
    return f'<dl class="facts">{cells}</dl>'


def render_sessions(sessions: Sequence[SessionView]) -> str:
    """The sessions part of a page (what a live page replaces as events arrive)."""
    if not sessions:
        return '<p class="empty">No session in this input yet.</p>'
    out = []
    for s in sessions:
        anchor = _anchor(s)
        turns = []
        n = 0
        for t in s.turns:
            if t.turn_id is not None:
                n += 1
            turns.append(_turn(s, t, n, anchor))
        fails = "".join(
            f'<div class="item notice error" data-kind="error"><span class="tag">session failed</span>{e(f)}</div>'
            for f in s.failures
        )
        out.append(
            f'<section class="session" id="{e(anchor)}"><h2>{e(session_title(s))}</h2>{_facts(s)}'
            f"{_timeline(s, anchor)}{''.join(turns)}{fails}</section>"
        )
    return "".join(out)


@cache
def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text("utf-8")


def _page(title: str, content: str, *, toolbar: bool, live: bool = False, source: str | None = None) -> str:
    nonce = secrets.token_urlsafe(16)
    csp = (
        f"default-src 'none'; style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'; img-src data:; "
        f"connect-src 'self'; base-uri 'none'; form-action 'none'"
    )
    bar = ""
    if toolbar:
        boxes = "".join(
            f'<label><input type="checkbox" data-filter="{k}" checked> {e(label)}</label>' for k, label in FILTERS
        )
        bar = (
            '<div class="toolbar" id="toolbar" hidden><input type="search" id="q" placeholder="Search this page" '
            f'aria-label="search">{boxes}<button type="button" id="expand">unfold all</button>'
            '<button type="button" id="collapse">fold all</button><span class="count" id="count"></span></div>'
        )
    live_note = '<span class="live" id="live-state">live</span>' if live else ""
    src = f' <span class="by">· {e(source)}</span>' if source else ""
    live_attr = ' data-live="1"' if live else ""
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{e(csp)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="normalize {e(__version__)}">'
        f'<title>{e(title)}</title><style nonce="{nonce}">{_asset("show.css")}</style></head>'
        f'<body{live_attr}><header class="top"><h1>{e(title)}{src} {live_note}</h1>{bar}</header>'
        f'<main id="sessions">{content}</main>'
        f'<script nonce="{nonce}">{_asset("show.js")}</script></body></html>'
    )


def render_page(sessions: Sequence[SessionView], *, source: str | None = None) -> str:
    """One self-contained page for the sessions of one input."""
    title = session_title(sessions[0]) if len(sessions) == 1 else f"{len(sessions)} sessions"
    return _page(title, render_sessions(sessions), toolbar=True, source=source)


def render_live_page(sessions_html: str, *, source: str) -> str:
    """The page ``--follow`` serves: ``sessions_html`` (from :func:`render_sessions`) now, updates by events."""
    return _page(f"{source} (live)", sessions_html, toolbar=True, live=True, source=None)


class IndexRow:
    """One session of a folder, for the index page."""

    def __init__(self, session: SessionView, href: str) -> None:
        self.session = session
        self.href = href


def render_index(rows: Sequence[IndexRow], *, source: str, problems: Sequence[str] = ()) -> str:
    """The index page of a folder: one row per session, linking to its page."""
    body = []
    for r in sorted(rows, key=lambda r: r.session.start or 0.0, reverse=True):
        s = r.session
        agent = s.agent + (f" {s.agent_version}" if s.agent_version else "")
        project = (s.cwd or "").rstrip("/").rsplit("/", 1)[-1]
        body.append(
            f'<tr><td class="nw">{e(agent)}</td><td class="nw">{e(clock(s.start))}</td><td>{e(project)}</td>'
            f'<td><a href="{e(r.href)}">{e(session_title(s))}</a></td>'
            f'<td class="num">{len(s.real_turns)}</td>'
            f'<td class="num">{e(cost_text(s.cost, s.currency) or "—")}</td></tr>'
        )
    table = (
        '<table class="index"><thead><tr><th>agent</th><th>date</th><th>project</th><th>title</th>'
        f"<th>turns</th><th>cost</th></tr></thead><tbody>{''.join(body)}</tbody></table>"
    )
    if problems:
        table += '<div class="item notice warning"><span class="tag">skipped</span>' + e("\n".join(problems)) + "</div>"
    return _page(f"{len(rows)} sessions", table, toolbar=False, source=source)
