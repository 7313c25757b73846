"""The recording scenarios: what the fake model answers and how the CLI is driven.

Each scenario names its case (the capture's file name, shared with the agent's
stored session file), the CLI arguments, the model's script, and, for runs
driven over stdin, a ``drive`` function writing client lines and waiting for
agent lines.  Case names of Claude Code follow the numbering of the first
recorded set (``01-print-text`` ...), so a re-recording can be compared file by
file with the set it may replace.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from servers import Script, Step, Text, Thinking, Tool


class Wire(Protocol):
    """What a ``drive`` function gets: write a client line, wait for an agent line."""

    def send(self, obj: dict[str, Any]) -> None: ...
    def wait(self, pred: Callable[[dict[str, Any]], bool], timeout: float = 60.0) -> dict[str, Any]: ...


Drive = Callable[[Wire], None]


@dataclass(frozen=True)
class Scenario:
    case: str
    args: list[str]
    script: Callable[[], Script]
    drive: Drive | None = None  # stdin-driven: a tap capture
    env: dict[str, str] = field(default_factory=dict)
    about: str = ""


def _one(marker: str, *steps: Step) -> Callable[[], Script]:
    return lambda: Script({marker: list(steps)})


def _user(text: str) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": text}, "parent_tool_use_id": None, "session_id": ""}


def _is(kind: str, subtype: str | None = None) -> Callable[[dict[str, Any]], bool]:
    def pred(m: dict[str, Any]) -> bool:
        if m.get("type") != kind:
            return False
        if subtype is None:
            return True
        return bool(m.get("subtype") == subtype or (m.get("request") or {}).get("subtype") == subtype)

    return pred


STREAM = ["--output-format", "stream-json", "--verbose"]
STDIN = [*STREAM, "--input-format", "stream-json"]

# ---------------------------------------------------------------- Claude Code


def _permission(answer: Callable[[dict[str, Any]], dict[str, Any]]) -> Drive:
    def drive(w: Wire) -> None:
        w.send(
            {"type": "control_request", "request_id": "req_1_init", "request": {"subtype": "initialize", "hooks": None}}
        )
        w.wait(_is("control_response"))
        w.send(_user("scenario permission: remove old.txt"))
        req = w.wait(_is("control_request", "can_use_tool"))
        response = {"subtype": "success", "request_id": req["request_id"], "response": answer(req["request"])}
        w.send({"type": "control_response", "response": response})
        w.wait(_is("result"))

    return drive


def _multiturn(w: Wire) -> None:
    w.send(_user("scenario multiturn: first question"))
    w.wait(_is("result"))
    w.send(_user("scenario multiturn: second question"))
    w.wait(_is("result"))


def _interrupt(w: Wire) -> None:
    w.send(_user("scenario interrupt: tell a long story"))
    w.wait(lambda m: m.get("type") == "stream_event" and m["event"].get("type") == "content_block_delta")
    w.send({"type": "control_request", "request_id": "req_2_intr", "request": {"subtype": "interrupt"}})
    w.wait(_is("result"))
    w.send(_user("scenario interrupt: and now briefly"))
    w.wait(_is("result"))


_STORY = " ".join(f"Sentence {i} of a long story." for i in range(60))

CLAUDE: list[Scenario] = [
    Scenario(
        "01-print-text",
        ["-p", "scenario text: hello", *STREAM],
        _one("scenario text", Step(blocks=(Text("Hello from the fake Anthropic server!"),))),
        about="the minimal run",
    ),
    Scenario(
        "03-thinking",
        ["-p", "scenario thinking: why?", *STREAM],
        _one("scenario thinking", Step(blocks=(Thinking("Let me think about it."), Text("Because it is so.")))),
        about="a thinking block and a text block in one API message",
    ),
    Scenario(
        "05-bash-ls-bypass",
        ["-p", "scenario bash: list the files", *STREAM, "--permission-mode", "bypassPermissions"],
        _one(
            "scenario bash",
            Step(blocks=(Text("I'll list them."), Tool("Bash", {"command": "ls", "description": "List files"}))),
            Step(blocks=(Text("There is one file: hello.txt."),)),
        ),
        about="one Bash round trip under bypassPermissions",
    ),
    Scenario(
        "10-multiturn-stream-input",
        [*STDIN],
        _one(
            "scenario multiturn",
            Step(blocks=(Text("First answer."),)),
            Step(blocks=(Thinking("Thinking about the second question."), Text("Second answer."))),
        ),
        drive=_multiturn,
        about="two user messages on stdin, the second after the first result",
    ),
    Scenario(
        "12-subagent-task",
        ["-p", "scenario subagent: delegate", *STREAM, "--permission-mode", "bypassPermissions"],
        lambda: Script(
            {
                "scenario subagent": [
                    Step(
                        blocks=(
                            Text("Delegating."),
                            Tool(
                                "Agent",
                                {
                                    "description": "Say hi",
                                    "prompt": "SUBTASK: say hi",
                                    "subagent_type": "general-purpose",
                                    "run_in_background": False,
                                },
                            ),
                        )
                    ),
                    Step(blocks=(Text("The sub-agent said hi."),)),
                ],
                "SUBTASK: say hi": [Step(blocks=(Text("hi"),))],
            }
        ),
        about="a foreground sub-agent",
    ),
    Scenario(
        "15-permission-stdio-deny",
        [*STDIN, "--permission-prompt-tool", "stdio"],
        _one(
            "scenario permission",
            Step(blocks=(Tool("Bash", {"command": "rm old.txt", "description": "Remove old.txt"}),)),
            Step(blocks=(Text("Understood, I will not remove it."),)),
        ),
        drive=_permission(lambda req: {"behavior": "deny", "message": "Not allowed by the user"}),
        about="can_use_tool answered deny",
    ),
    Scenario(
        "16-permission-stdio-allow",
        [*STDIN, "--permission-prompt-tool", "stdio"],
        _one(
            "scenario permission",
            Step(blocks=(Tool("Bash", {"command": "rm -f old.txt", "description": "Remove old.txt"}),)),
            Step(blocks=(Text("Removed."),)),
        ),
        drive=_permission(lambda req: {"behavior": "allow", "updatedInput": req["input"]}),
        about="can_use_tool answered allow",
    ),
    Scenario(
        "17-api-error-400",
        ["-p", "scenario error400: hello", *STREAM],
        _one("scenario error400", Step(status=400, error_type="invalid_request_error", repeat=True)),
        about="HTTP 400 on every request",
    ),
    Scenario(
        "18-api-error-529-retries",
        ["-p", "scenario error529: hello", *STREAM],
        _one(
            "scenario error529",
            Step(status=529, error_type="overloaded_error", error_message="Overloaded", repeat=True),
        ),
        env={"CLAUDE_CODE_MAX_RETRIES": "2"},
        about="HTTP 529 overloaded with two retries",
    ),
    Scenario(
        "27-interrupt",
        [*STDIN, "--include-partial-messages"],
        _one(
            "scenario interrupt",
            Step(blocks=(Text(_STORY),), delay=0.5),
            Step(blocks=(Text("Briefly: done."),)),
        ),
        drive=_interrupt,
        about="interrupt after the first text delta of a slow reply",
    ),
    Scenario(
        "31-write-file",
        ["-p", "scenario write: create notes.txt", *STREAM, "--permission-mode", "bypassPermissions"],
        _one(
            "scenario write",
            Step(blocks=(Tool("Write", {"file_path": "{cwd}/notes.txt", "content": "some notes\n"}),)),
            Step(blocks=(Text("Created notes.txt."),)),
        ),
        about="Write of a new file",
    ),
    Scenario(
        "40-parallel-tools",
        ["-p", "scenario parallel: read and list", *STREAM, "--permission-mode", "bypassPermissions"],
        _one(
            "scenario parallel",
            Step(
                blocks=(
                    Tool("Read", {"file_path": "{cwd}/hello.txt"}),
                    Tool("Bash", {"command": "ls -1", "description": "List files"}),
                )
            ),
            Step(blocks=(Text("hello.txt says hello world."),)),
        ),
        about="two tool calls in one API message (parallel)",
    ),
    Scenario(
        "41-stream-cut-midway",
        ["-p", "scenario midstream: hello", *STREAM, "--include-partial-messages"],
        _one(
            "scenario midstream",
            Step(blocks=(Text("This reply will be cut off in the middle."),), fail_after=4, repeat=True),
        ),
        env={"CLAUDE_CODE_MAX_RETRIES": "1"},
        about="the SSE connection drops mid-stream, every time",
    ),
]

# ---------------------------------------------------------------- Codex


def _exec(prompt: str) -> list[str]:
    return ["exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", prompt]


CODEX: list[Scenario] = [
    Scenario(
        "text_reasoning",
        _exec("scenario text: hello"),
        _one(
            "scenario text",
            Step(blocks=(Thinking("**Greeting the user**"), Text("Hello from the fake Responses server!"))),
        ),
        about="reasoning then a streamed answer",
    ),
    Scenario(
        "shell_command",
        _exec("scenario shell: list the files"),
        _one(
            "scenario shell",
            Step(blocks=(Tool("exec_command", {"cmd": "ls", "workdir": "{cwd}", "yield_time_ms": 10000}),)),
            Step(blocks=(Text("There is one file: hello.txt."),)),
        ),
        about="one exec_command round trip",
    ),
    Scenario(
        "apply_patch",
        _exec("scenario patch: add notes.txt"),
        _one(
            "scenario patch",
            Step(
                blocks=(
                    Tool(
                        "apply_patch",
                        {"input": "*** Begin Patch\n*** Add File: notes.txt\n+some notes\n*** End Patch"},
                        custom=True,
                    ),
                )
            ),
            Step(blocks=(Text("Added notes.txt."),)),
        ),
        about="a freeform apply_patch adding a file",
    ),
    Scenario(
        "failed_turn",
        _exec("scenario fail: hello"),
        _one("scenario fail", Step(blocks=(Text("never complete"),), fail_after=2, repeat=True)),
        about="the model stream drops every time",
    ),
    Scenario(
        "http_500",
        _exec("scenario http500: hello"),
        _one("scenario http500", Step(status=500, error_type="server_error", repeat=True)),
        about="HTTP 500 on every request",
    ),
]


def fill(obj: Any, cwd: str) -> Any:
    """Scenario arguments with ``{cwd}`` replaced by the run's working directory."""
    if isinstance(obj, str):
        return obj.replace("{cwd}", cwd)
    if isinstance(obj, list):
        return [fill(x, cwd) for x in obj]
    if isinstance(obj, dict):
        return {k: fill(v, cwd) for k, v in obj.items()}
    return obj


def with_cwd(script: Script, cwd: str) -> Script:
    """The script with ``{cwd}`` in tool inputs replaced (paths exist only once the run has a folder)."""
    convs: dict[str, list[Step]] = {}
    for marker, steps in script.conversations.items():
        convs[marker] = [
            Step(
                blocks=tuple(
                    Tool(b.name, fill(b.input, cwd), b.custom) if isinstance(b, Tool) else b for b in s.blocks
                ),
                status=s.status,
                error_type=s.error_type,
                error_message=s.error_message,
                fail_after=s.fail_after,
                delay=s.delay,
                repeat=s.repeat,
            )
            for s in steps
        ]
    return Script(convs, script.default)


def dumps(obj: dict[str, Any]) -> bytes:
    """A client line as the recorder writes it: compact JSON."""
    return json.dumps(obj, separators=(",", ":")).encode()
