"""Session views in the terminal, with rich: the page's structure, paged when the output is a terminal."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence

from rich.console import Console, Group, RenderableType
from rich.markdown import Markdown
from rich.pager import Pager
from rich.panel import Panel
from rich.rule import Rule
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text as RichText

from ._build import Call, Item, Notice, PlanItem, Question, SessionView, SubagentView, Text, UserItem
from ._format import clip, clock, command_of, cost_text, json_text, secs, session_title, text_of, tokens_text

__all__ = ["render_terminal", "show_terminal"]

#: Lines of one tool output shown in the terminal; the page shows more.
MAX_LINES = 40

_NOTICE_STYLE = {"error": "bold red", "warning": "yellow", "note": "dim italic"}


def _lines(text: str) -> str:
    lines = text.splitlines()
    if len(lines) <= MAX_LINES:
        return text
    return "\n".join([*lines[:MAX_LINES], f"… {len(lines) - MAX_LINES} more lines"])


def _header(s: SessionView) -> Table:
    t = Table.grid(padding=(0, 2))
    t.add_column(style="dim")
    t.add_column()
    agent = s.agent + (f" {s.agent_version}" if s.agent_version else "")
    for k, v in (
        ("agent", agent),
        ("protocol", s.protocol or ""),
        ("model", s.model or ""),
        ("cwd", s.cwd or ""),
        ("started", clock(s.start)),
        ("duration", secs(s.duration)),
        ("turns", str(len(s.real_turns))),
        ("tokens", tokens_text(s.tokens)),
        ("cost", cost_text(s.cost, s.currency)),
        ("time in turns", " · ".join(f"{p} {secs(v)}" for p, v in s.phases.items() if v > 0)),
    ):
        if v:
            t.add_row(k, RichText(v))
    if s.replayed:
        t.add_row("replayed", RichText(f"{s.replayed} of {s.events} events are replayed history", style="magenta"))
    return t


def _call(call: Call) -> Panel:
    parts: list[RenderableType] = []
    command = command_of(call.input)
    if command is not None:
        parts.append(RichText("$ " + clip(command, 2000), style="bold"))
    elif call.input not in (None, {}):
        parts.append(RichText(_lines(json_text(call.input)), style="dim"))
    perm = call.permission
    if perm is not None and perm.request_id is not None:
        options = ", ".join(perm.options)
        parts.append(RichText(f"approval asked{f' ({options})' if options else ''}: {perm.outcome or 'pending'}"))
    if call.subagent is not None:
        parts.append(_subagent(call.subagent))
    streamed = "".join(call.stdout)
    output = text_of(call.output) if call.output is not None else ""
    if streamed and streamed.strip() != output.strip():
        parts.append(RichText(_lines(streamed)))
    if output:
        parts.append(RichText(_lines(output)))
    for path, diff, _change in call.diffs:
        parts.append(RichText(path, style="bold"))
        parts.append(Syntax(_lines(diff), "diff", theme="ansi_dark", background_color="default"))
    status = call.phase + (f", exit {call.exit_code}" if call.exit_code is not None else "")
    failed = call.phase == "failed" or call.exit_code not in (None, 0)
    title = RichText.assemble(
        (f"[{call.category or 'other'}] ", "dim"),
        (call.tool, "bold"),
        (f" {call.title}" if call.title and call.title != call.tool else "", "cyan"),
        (f" · {status}", "red" if failed else "green"),
    )
    if perm is not None:
        title.append(f" · approval: {perm.outcome or 'pending'}", style="red" if perm.outcome == "denied" else "dim")
    return Panel(Group(*parts) if parts else RichText(""), title=title, title_align="left", border_style="dim")


def _subagent(sub: SubagentView) -> Panel:
    body: list[RenderableType] = []
    if sub.description:
        body.append(RichText(sub.description))
    if sub.prompt and not any(isinstance(i, UserItem) for i in sub.items):
        body.append(RichText("task: " + sub.prompt, style="blue"))
    body.extend(_items(sub.items))
    if sub.result is not None:
        body.append(RichText(_lines(text_of(sub.result)), style="dim"))
    title = f"sub-agent {sub.name or ''} · {sub.phase}"
    return Panel(Group(*body), title=title, title_align="left", border_style="blue")


def _item(item: Item) -> RenderableType:
    if isinstance(item, UserItem):
        return Panel(RichText(item.text), title="user", title_align="left", border_style="blue")
    if isinstance(item, Text):
        if item.kind == "assistant":
            return Markdown(item.text)
        words = len((item.text or item.summary or "").split())
        first = (item.summary or item.text or "").strip().splitlines()[:1]
        return RichText(f"▸ reasoning · {words} words" + (f": {first[0][:100]}" if first else ""), style="dim italic")
    if isinstance(item, Call):
        return _call(item)
    if isinstance(item, Notice):
        detail = f" ({item.detail})" if item.detail else ""
        return RichText(f"{item.kind}: {item.message}{detail}", style=_NOTICE_STYLE[item.kind])
    if isinstance(item, PlanItem):
        return RichText("plan:\n" + "\n".join(f"  [{s}] {c}" for s, c in item.entries))
    if isinstance(item, Question):
        return RichText("question: " + " / ".join(item.questions) + f" → {item.outcome or 'pending'}")
    return _subagent(item)


def _items(items: Iterable[Item]) -> list[RenderableType]:
    return [_item(i) for i in items]


def render_terminal(sessions: Sequence[SessionView]) -> list[RenderableType]:
    """What the terminal shows, as rich renderables (one list, printed in order)."""
    out: list[RenderableType] = []
    for s in sessions:
        out.append(Rule(session_title(s), style="bold"))
        out.append(_header(s))
        n = 0
        for t in s.turns:
            if t.turn_id is None and not t.items:
                continue
            if t.turn_id is not None:
                n += 1
            label = f"turn {n}" if t.turn_id is not None else "outside a turn"
            if t.replay:
                label += " · replayed history"
            if t.reason == "interrupt":
                label += " · interrupted"
            usage = " · ".join(x for x in (tokens_text(t.tokens), cost_text(t.cost, t.currency)) if x)
            out.append(Rule(label + (f" · {usage}" if usage else ""), align="left", style="dim"))
            out.extend(_items(t.items))
        out.extend(RichText(f"session failed: {f}", style="bold red") for f in s.failures)
    return out


class _Pager(Pager):
    """``$PAGER``, else ``less -R`` (colours kept); without either, the text as it is."""

    def show(self, content: str) -> None:
        command = shlex.split(os.environ.get("PAGER") or "less -R")
        if not command or shutil.which(command[0]) is None:
            sys.stdout.write(content)
            return
        with subprocess.Popen(command, stdin=subprocess.PIPE, text=True, errors="backslashreplace") as proc:
            assert proc.stdin is not None
            try:
                proc.stdin.write(content)
                proc.stdin.close()
            except BrokenPipeError:  # the reader quit the pager early
                pass
            while True:
                try:
                    proc.wait()
                    break
                except KeyboardInterrupt:  # Ctrl-C belongs to the pager while it runs
                    continue


def show_terminal(sessions: Sequence[SessionView], console: Console | None = None) -> None:
    """Print the sessions; through the pager (``$PAGER``, or ``less -R``) when the output is a terminal."""
    console = console or Console()
    parts = render_terminal(sessions)
    if console.is_terminal:
        with console.pager(_Pager(), styles=True):
            console.print(*parts)
    else:
        console.print(*parts)
