"""A normalized session whose every agent-supplied value tries to run code, load something or restyle the page.

``normalize show`` must show all of it as text.  Each payload, when it works,
sets ``window.__pwned`` (to a number saying which one), or requests
``{beacon}/<n>`` from a server the test runs, or hides the page.
"""

from __future__ import annotations

from normalize import (
    SCHEMA_VERSION,
    AssistantMessage,
    EventEnvelope,
    FileDiff,
    Native,
    PermissionOption,
    PermissionRequest,
    Reasoning,
    RequestResolved,
    SessionCreated,
    SessionEvent,
    SessionRecord,
    StreamHeader,
    ToolCall,
    ToolCallRef,
    TurnComplete,
    TurnStart,
    UserMessage,
    encode,
)
from normalize._model import AnyBody

SID = "s-hostile"


def payloads(beacon: str) -> dict[str, str]:
    """Named attack strings; ``beacon`` is an http://127.0.0.1:PORT address the test watches."""
    return {
        "script": "<script>window.__pwned=1</script>",
        "img": '<img src=x onerror="window.__pwned=2">',
        "svg": "<svg onload=window.__pwned=3></svg>",
        "link": "[click me](javascript:window.__pwned=4)",
        "autolink": "<javascript:window.__pwned=5>",
        "data_link": "[data](data:text/html;base64,PHNjcmlwdD53aW5kb3cuX19wd25lZD02PC9zY3JpcHQ+)",
        "image": f"![tracker]({beacon}/image.png)",
        "style": "<style>body{display:none !important}</style>",
        "css_url": f"<div style=\"background:url('{beacon}/css.png')\">styled</div>",
        "break_out": "</pre></details></main><script>window.__pwned=7</script>",
        "attr": '" onmouseover="window.__pwned=8" x="',
        "iframe": f'<iframe src="{beacon}/frame"></iframe>',
        "meta": f'<meta http-equiv="refresh" content="0;url={beacon}/refresh">',
        "title": "</title><script>window.__pwned=9</script>",
        "base": f'<base href="{beacon}/">',
    }


def _ev(seq: int, body: AnyBody, turn: str | None = "turn:1") -> SessionEvent:
    env = EventEnvelope(
        session_id=SID,
        agent="hostile-agent",
        seq=seq,
        ts=f"2026-01-01T00:00:{seq:02d}.000Z",
        origin="live",
        native=Native(protocol="core", payload={}),
        body=body,
        turn_id=turn,
    )
    return SessionEvent(session_id=SID, event=env)


def hostile_jsonl(beacon: str) -> str:
    """The session as a normalized JSONL stream (what ``normalize show`` reads)."""
    p = payloads(beacon)
    everything = "\n\n".join(p.values())
    tool = p["svg"] + p["attr"]
    path = p["break_out"] + "/" + p["img"]
    bodies: list[AnyBody] = [
        TurnStart(),
        UserMessage(message_id="u1", text=everything),
        Reasoning(reasoning_id="r1", redacted=False, text=everything),
        AssistantMessage(message_id="a1", text=everything),
        ToolCall(
            call_id="c1",
            tool=tool,
            phase="started",
            title=p["title"],
            category="execute",
            input={"command": p["script"] + p["css_url"], p["attr"]: p["img"]},
        ),
        PermissionRequest(
            request_id="q1",
            tool_call=ToolCallRef(call_id="c1", tool=tool, title=p["iframe"]),
            options=[PermissionOption(id="allow", kind="allow_once", label=p["style"])],
        ),
        RequestResolved(request_id="q1", outcome="answered", answer={"behavior": "allow"}),
        FileDiff(path=path, diff="@@ -1 +1 @@\n-" + p["meta"] + "\n+" + p["base"], call_id="c1"),
        ToolCall(call_id="c1", tool=tool, phase="completed", output=everything, exit_code=0),
        TurnComplete(reason="ok"),
    ]
    record = SessionRecord(
        id=SID,
        agent="hostile-agent",
        protocol="core",
        title=p["title"] + p["style"],
        cwd=p["break_out"],
        model=p["img"],
    )
    header = StreamHeader(schema_version=SCHEMA_VERSION, library="normalize", library_version="test")
    lines = [encode(header).decode()]
    lines.append(encode(SessionCreated(session_id=SID, record=record)).decode())
    lines.extend(encode(_ev(i, b)).decode() for i, b in enumerate(bodies, 1))
    return "\n".join(lines) + "\n"
