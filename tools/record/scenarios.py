"""The recording scenarios: what the fake model answers and how the CLI is driven.

Each scenario names its case (the capture's file name, shared with the agent's
stored session file), the CLI arguments, the model's script, and, for runs
driven over stdin, a ``drive`` function writing client lines and waiting for
agent lines.  Case names of Claude Code follow the numbering of the first
recorded set (``01-print-text`` ...), so a re-recording can be compared file by
file with the set it may replace.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rpc import AcpClientServices, Rpc, Wire, is_method
from servers import Script, Step, Text, Thinking, Tool

Drive = Callable[[Wire], None]


@dataclass(frozen=True)
class Scenario:
    case: str
    args: list[str]
    script: Callable[[], Script]
    drive: Drive | None = None  # stdin-driven: a tap capture
    env: dict[str, str] = field(default_factory=dict)
    about: str = ""
    follows: str | None = None  # runs right after this case, in its HOME ({session} = its session id)


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
#: the mode that asks before a command runs, named: Claude Code 2.1.290 starts in ``auto``
#: (its classifier lets ``rm old.txt`` run without a ``can_use_tool``), other versions in ``default``
ASK = ["--permission-mode", "default"]

# ---------------------------------------------------------------- Claude Code


def _permission(answer: Callable[[dict[str, Any]], dict[str, Any]]) -> Drive:
    def drive(w: Wire) -> None:
        w.send(
            {"type": "control_request", "request_id": "req_1_init", "request": {"subtype": "initialize", "hooks": None}}
        )
        # Claude Code before 1.0.98 answers only `interrupt` requests: its `initialize` stays unanswered
        with contextlib.suppress(TimeoutError):
            w.wait(_is("control_response"), timeout=10)
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
        "29-bash-error",
        ["-p", "scenario bash error: list a missing folder", *STREAM, "--permission-mode", "bypassPermissions"],
        _one(
            "scenario bash error",
            Step(blocks=(Tool("Bash", {"command": "ls /nonexistent-dir-for-test", "description": "List a folder"}),)),
            Step(blocks=(Text("That folder does not exist."),)),
        ),
        about="a Bash command that exits 2 under bypassPermissions",
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
        [*STDIN, "--permission-prompt-tool", "stdio", *ASK],
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
        [*STDIN, "--permission-prompt-tool", "stdio", *ASK],
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
        "28-resume-pre",
        ["-p", "scenario resume: hello", *STREAM],
        _one("scenario resume", Step(blocks=(Text("Hello, first run."),))),
        about="the first run of the session 28-resume continues",
    ),
    Scenario(
        "28-resume",
        ["--resume", "{session}", "-p", "scenario resume: why?", *STREAM],
        _one("scenario resume", Step(blocks=(Thinking("Thinking about why."), Text("Because of the first run.")))),
        follows="28-resume-pre",
        about="--resume <session of 28-resume-pre> with a new prompt, a separate process",
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


# ---------------------------------------------------------------- Codex app-server

APP_ARGS = ["app-server"]
ASK = {"approvalPolicy": "on-request", "sandbox": "read-only"}

#: multi_agent_v2 (i_collab_*): the sub-agent's task, the parent's spawn of it, and its wait
_LISTER_TASK = "SUBTASK: list the files"
_SPAWN_LISTER = Step(
    blocks=(
        Text("Delegating."),
        Tool(
            "spawn_agent",
            {"task_name": "lister", "message": _LISTER_TASK, "fork_turns": "none"},
            namespace="collaboration",
        ),
    )
)
_WAIT_AGENT = Step(blocks=(Tool("wait_agent", {"timeout_ms": 60000}, namespace="collaboration"),))


def _lister(*more: Step) -> list[Step]:
    """The sub-agent's turns: it runs ``ls`` and says what it found; then ``more``."""
    return [
        Step(blocks=(Tool("exec_command", {"cmd": "ls", "workdir": "{cwd}"}),)),
        Step(blocks=(Text("hello.txt"),)),
        *more,
    ]


def _app_open(w: Wire, thread: dict[str, Any] | None = None) -> tuple[Rpc, str]:
    """initialize, initialized, thread/start: the client and the new thread's id."""
    rpc = Rpc(w, jsonrpc=False)
    info = {"name": "normalize_record", "title": "normalize recorder", "version": "0.1.0"}
    rpc.call("initialize", {"clientInfo": info})
    rpc.notify("initialized")
    res = rpc.call("thread/start", {"cwd": "{cwd}", **(thread or {})})
    thread_id = str(res["result"]["thread"]["id"])
    w.state["session"] = thread_id
    return rpc, thread_id


def _app_turn(rpc: Rpc, thread_id: str, text: str, *, wait: bool = True) -> str:
    """turn/start with one text input; waits for turn/completed unless told not to; the turn id."""
    params = {"threadId": thread_id, "input": [{"type": "text", "text": text, "text_elements": []}]}
    res = rpc.call("turn/start", params)
    turn_id = str(res["result"]["turn"]["id"])
    if wait:
        rpc.wire.wait(is_method("turn/completed", turn__id=turn_id), 180)
    return turn_id


def _app_simple(prompt: str, thread: dict[str, Any] | None = None, decisions: tuple[str, ...] = ()) -> Drive:
    def drive(w: Wire) -> None:
        answers = list(decisions)

        def decide(params: dict[str, Any]) -> dict[str, Any]:
            return {"decision": answers.pop(0) if answers else "decline"}

        rpc, thread_id = _app_open(w, thread)
        rpc.handlers["item/commandExecution/requestApproval"] = decide
        rpc.handlers["item/fileChange/requestApproval"] = decide
        _app_turn(rpc, thread_id, prompt)
        w.drain(1.0)

    return drive


def _app_two_turns(w: Wire) -> None:
    rpc, thread_id = _app_open(w)
    _app_turn(rpc, thread_id, "scenario twoturns: first question")
    _app_turn(rpc, thread_id, "scenario twoturns: second question")
    w.drain(1.0)


def _app_interrupt(w: Wire) -> None:
    rpc, thread_id = _app_open(w)
    turn_id = _app_turn(rpc, thread_id, "scenario interrupt: tell a long story", wait=False)
    w.wait(is_method("item/agentMessage/delta", turnId=turn_id), 120)
    rpc.call("turn/interrupt", {"threadId": thread_id, "turnId": turn_id})
    w.wait(is_method("turn/completed", turn__id=turn_id), 120)
    _app_turn(rpc, thread_id, "scenario interrupt: and now briefly")
    w.drain(1.0)


def _app_resume(w: Wire) -> None:
    rpc = Rpc(w, jsonrpc=False)
    info = {"name": "normalize_record", "title": "normalize recorder", "version": "0.1.0"}
    rpc.call("initialize", {"clientInfo": info})
    rpc.notify("initialized")
    thread_id = str(w.state["session"])
    rpc.call("thread/resume", {"threadId": thread_id, "cwd": "{cwd}"})
    _app_turn(rpc, thread_id, "scenario resume: second question")
    w.drain(1.0)


def _escalated(cmd: str, why: str) -> Tool:
    return Tool(
        "exec_command",
        {"cmd": cmd, "workdir": "{cwd}", "sandbox_permissions": "require_escalated", "justification": why},
    )


_PATCH = (
    "*** Begin Patch\n*** Update File: hello.txt\n@@\n-hello world\n+hello, world\n"
    "*** Add File: notes.txt\n+some notes\n*** End Patch"
)

APP_SERVER: list[Scenario] = [
    Scenario(
        "a_simple_text",
        APP_ARGS,
        _one(
            "scenario text",
            Step(blocks=(Thinking("**Greeting the user**"), Text("Hello from the fake Responses server!"))),
        ),
        drive=_app_simple("scenario text: hello"),
        about="initialize, thread/start, one turn: reasoning and a streamed answer",
    ),
    Scenario(
        "b_command_approval_accept",
        APP_ARGS,
        _one(
            "scenario accept",
            Step(blocks=(Text("I'll list the files."), _escalated("ls -1", "Do you allow listing the files?"))),
            Step(blocks=(Text("There is one file: hello.txt."),)),
        ),
        drive=_app_simple("scenario accept: list the files", ASK, ("accept",)),
        about="read-only, on-request: an escalated command, approval answered accept",
    ),
    Scenario(
        "c_command_approval_decline",
        APP_ARGS,
        _one(
            "scenario decline",
            Step(blocks=(_escalated("rm -f hello.txt", "Do you allow removing hello.txt?"),)),
            Step(blocks=(Text("Understood, I left hello.txt alone."),)),
        ),
        drive=_app_simple("scenario decline: remove hello.txt", ASK, ("decline",)),
        about="the same, answered decline",
    ),
    Scenario(
        "d_file_change_approval",
        APP_ARGS,
        _one(
            "scenario patch",
            Step(blocks=(Tool("apply_patch", {"input": _PATCH}, custom=True),)),
            Step(blocks=(Text("Updated hello.txt and added notes.txt."),)),
        ),
        drive=_app_simple("scenario patch: edit hello.txt, add notes.txt", ASK, ("accept",)),
        about="apply_patch updating one file and adding one, fileChange approval accepted",
    ),
    Scenario(
        "e_two_turns",
        APP_ARGS,
        _one(
            "scenario twoturns",
            Step(blocks=(Text("First answer."),)),
            Step(blocks=(Thinking("Thinking about the second question."), Text("Second answer."))),
        ),
        drive=_app_two_turns,
        about="two turns on one thread",
    ),
    Scenario(
        "f_interrupt",
        APP_ARGS,
        _one(
            "scenario interrupt",
            Step(blocks=(Text(_STORY),), delay=0.7),
            Step(blocks=(Text("Briefly: done."),)),
        ),
        drive=_app_interrupt,
        about="turn/interrupt after the first agentMessage delta of a slow reply, then a new turn",
    ),
    Scenario(
        "g_resume_pre",
        APP_ARGS,
        _one("scenario resume", Step(blocks=(Text("First answer."),))),
        drive=_app_simple("scenario resume: first question"),
        about="the first process of the thread g_resume resumes",
    ),
    Scenario(
        "g_resume",
        APP_ARGS,
        _one("scenario resume", Step(blocks=(Text("Second answer, after the resume."),))),
        drive=_app_resume,
        follows="g_resume_pre",
        about="a new app-server process: thread/resume of g_resume_pre's thread, then a turn",
    ),
    Scenario(
        "h_api_error",
        APP_ARGS,
        _one("scenario http500", Step(status=500, error_type="server_error", repeat=True)),
        drive=_app_simple("scenario http500: hello"),
        about="HTTP 500 on every model request: retry notice, failed turn",
    ),
    Scenario(
        "i_collab_agent",
        [*APP_ARGS, "--enable", "multi_agent_v2"],
        lambda: Script(
            {
                _LISTER_TASK: _lister(),
                "scenario collab": [_SPAWN_LISTER, _WAIT_AGENT, Step(blocks=(Text("The sub-agent found hello.txt."),))],
            }
        ),
        drive=_app_simple("scenario collab: delegate the listing"),
        about="multi_agent_v2: spawn_agent (a sub-agent thread running a command), wait_agent, the answer",
    ),
    Scenario(
        "i_collab_followup",
        [*APP_ARGS, "--enable", "multi_agent_v2"],
        lambda: Script(
            {
                _LISTER_TASK: _lister(Step(blocks=(Text("hello.txt holds one line."),))),
                "scenario followup": [
                    _SPAWN_LISTER,
                    _WAIT_AGENT,
                    Step(
                        blocks=(
                            Tool(
                                "followup_task",
                                {"target": "/root/lister", "message": "FOLLOWUP: how long is it?"},
                                namespace="collaboration",
                            ),
                        )
                    ),
                    _WAIT_AGENT,
                    Step(blocks=(Text("The sub-agent found hello.txt, one line long."),)),
                ],
            }
        ),
        drive=_app_simple("scenario followup: delegate the listing, then ask more"),
        about="multi_agent_v2: spawn_agent, wait_agent, followup_task to the same sub-agent (its second turn), wait",
    ),
]

# ---------------------------------------------------------------- ACP adapters


def _acp_open(w: Wire, choose: tuple[str, ...] = ()) -> Rpc:
    """initialize with fs and terminal; permission requests answered by option kind, in order."""
    rpc = Rpc(w, jsonrpc=True)
    services = AcpClientServices(w.cwd, {"PATH": "/usr/bin:/bin", "HOME": str(w.cwd.parent / "home")})
    rpc.handlers.update(services.handlers())
    w.state["close"] = services.close
    kinds = list(choose)

    def permission(params: dict[str, Any]) -> dict[str, Any]:
        want = kinds.pop(0) if kinds else "reject_once"
        options = params.get("options") or []
        pick = next((o for o in options if o.get("kind") == want), None)
        if pick is None:
            pick = next((o for o in options if str(o.get("kind", "")).startswith(want.split("_")[0])), None)
        if pick is None:
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": pick["optionId"]}}

    rpc.handlers["session/request_permission"] = permission
    caps = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}
    info = {"name": "normalize-record", "title": "normalize recorder", "version": "0.1.0"}
    rpc.call("initialize", {"protocolVersion": 1, "clientCapabilities": caps, "clientInfo": info})
    return rpc


def _acp_new(rpc: Rpc) -> str:
    res = rpc.call("session/new", {"cwd": "{cwd}", "mcpServers": []})
    session = str(res["result"]["sessionId"])
    rpc.wire.state["session"] = session
    return session


def _acp_prompt(rpc: Rpc, session: str, text: str) -> dict[str, Any]:
    # NREC_ACP_PROMPT_WAIT (seconds, default 240): an agent that retries a failing model for
    # longer (Gemini CLI 0.31) answers only after it
    wait = float(os.environ.get("NREC_ACP_PROMPT_WAIT", "240"))
    return rpc.call("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]}, wait)


def _acp(*prompts: str, mode: str | None = None, choose: tuple[str, ...] = ()) -> Drive:
    def drive(w: Wire) -> None:
        rpc = _acp_open(w, choose)
        session = _acp_new(rpc)
        if mode is not None:
            rpc.call("session/set_mode", {"sessionId": session, "modeId": mode})
        for text in prompts:
            _acp_prompt(rpc, session, text)
        w.drain(1.0)

    return drive


def _acp_cancel(w: Wire) -> None:
    rpc = _acp_open(w)
    session = _acp_new(rpc)
    params = {"sessionId": session, "prompt": [{"type": "text", "text": "scenario cancel: tell a long story"}]}
    rid = rpc.request("session/prompt", params)
    w.wait(is_method("session/update", update__sessionUpdate="agent_message_chunk"), 120)
    rpc.notify("session/cancel", {"sessionId": session})
    w.wait(lambda m: "method" not in m and m.get("id") == rid, 120)
    _acp_prompt(rpc, session, "scenario cancel: and now briefly")
    w.drain(1.0)


def _acp_load(w: Wire) -> None:
    rpc = _acp_open(w)
    session = str(w.state["session"])
    rpc.call("session/load", {"sessionId": session, "cwd": "{cwd}", "mcpServers": []})
    _acp_prompt(rpc, session, "scenario load: and a second question")
    w.drain(1.0)


def _acp_set(prefix: str, agent: str, shell: str, edit: list[Step], cancel_delay: float) -> list[Scenario]:
    """The ACP scenarios of one adapter; ``shell`` is its shell tool, ``edit`` its edit round trip."""
    # Gemini CLI asks in its default mode, which a new session is already in
    ask_mode = {"claude": "default", "codex": "read-only"}.get(agent)

    def shell_call(cmd: str) -> Tool:
        if agent in ("claude", "gemini"):
            return Tool(shell, {"command": cmd, "description": "Run " + cmd})
        return _escalated(cmd, f"Do you allow running {cmd}?")

    return [
        Scenario(
            f"{prefix}-a-text-thinking",
            [],
            _one(
                "scenario text",
                Step(blocks=(Text("Hello from the fake model server!"),)),
                Step(blocks=(Thinking("Two and two make four."), Text("2 + 2 = 4."))),
            ),
            drive=_acp("scenario text: hello", "scenario text: please think about 2+2"),
            about="two prompts: a streamed text answer, then thinking and text",
        ),
        Scenario(
            f"{prefix}-b-shell-allow",
            [],
            _one(
                "scenario allow",
                Step(blocks=(Text("I'll create it."), shell_call("touch made.txt"))),
                Step(blocks=(Text("Created made.txt."),)),
            ),
            drive=_acp("scenario allow: create made.txt", mode=ask_mode, choose=("allow_once",)),
            about="a shell command with a permission request, allowed once",
        ),
        Scenario(
            f"{prefix}-c-shell-reject",
            [],
            _one(
                "scenario reject",
                Step(blocks=(shell_call("rm -f hello.txt"),)),
                Step(blocks=(Text("Understood, I left hello.txt alone."),)),
            ),
            drive=_acp("scenario reject: remove hello.txt", mode=ask_mode, choose=("reject_once",)),
            about="the same, rejected once",
        ),
        Scenario(
            f"{prefix}-d-edit-diff",
            [],
            _one("scenario edit", *edit),
            drive=_acp("scenario edit: fix hello.txt", mode=ask_mode, choose=("allow_once", "allow_once")),
            about="a file edit with diff content, allowed",
        ),
        Scenario(
            f"{prefix}-e-cancel-stream",
            [],
            _one(
                "scenario cancel",
                Step(blocks=(Text(_STORY),), delay=cancel_delay),
                Step(blocks=(Text("Briefly: done."),)),
            ),
            drive=_acp_cancel,
            about="session/cancel after the first agent_message_chunk of a slow reply, then a new prompt",
        ),
        Scenario(
            f"{prefix}-f-load-pre",
            [],
            _one("scenario load", Step(blocks=(Text("First answer."),))),
            drive=_acp("scenario load: first question"),
            about="the session f-load loads, in the same HOME",
        ),
        Scenario(
            f"{prefix}-f-load",
            [],
            _one("scenario load", Step(blocks=(Text("Second answer, after the load."),))),
            drive=_acp_load,
            follows=f"{prefix}-f-load-pre",
            about="a new adapter process: session/load replays f-load-pre, then a live prompt",
        ),
        Scenario(
            f"{prefix}-x-api-error",
            [],
            _one("scenario http500", Step(status=500, error_type="api_error", repeat=True)),
            drive=_acp("scenario http500: hello"),
            env={"CLAUDE_CODE_MAX_RETRIES": "1"},
            about="HTTP 500 on every model request",
        ),
    ]


_ACP_CLAUDE_SET = _acp_set(
    "claude",
    "claude",
    "Bash",
    [
        Step(blocks=(Tool("Read", {"file_path": "{cwd}/hello.txt"}),)),
        Step(
            blocks=(
                Tool(
                    "Edit",
                    {"file_path": "{cwd}/hello.txt", "old_string": "hello world", "new_string": "hello, world"},
                ),
            )
        ),
        Step(blocks=(Text("Fixed the comma."),)),
    ],
    0.7,
)
#: claude-agent-acp only: a sub-agent (its events carry ``_meta.claudeCode.parentToolUseId``)
_ACP_CLAUDE_SUBAGENT = Scenario(
    "claude-h-subagent",
    [],
    lambda: Script(
        {
            "scenario subagent": [
                Step(
                    blocks=(
                        Text("Delegating."),
                        Tool(
                            "Agent",
                            {
                                "description": "List the files",
                                "prompt": "SUBTASK: list the files",
                                "subagent_type": "general-purpose",
                                "run_in_background": False,
                            },
                        ),
                    )
                ),
                Step(blocks=(Text("The sub-agent found hello.txt."),)),
            ],
            "SUBTASK: list the files": [
                Step(blocks=(Tool("Bash", {"command": "ls", "description": "List files"}),)),
                Step(blocks=(Text("hello.txt"),)),
            ],
        }
    ),
    drive=_acp("scenario subagent: delegate the listing", mode="default", choose=("allow_once", "allow_once")),
    about="a foreground sub-agent (Agent tool) running a shell command",
)
ACP_CLAUDE = [*_ACP_CLAUDE_SET, _ACP_CLAUDE_SUBAGENT]
ACP_CODEX = _acp_set(
    "codex",
    "codex",
    "exec_command",
    [
        Step(blocks=(Tool("apply_patch", {"input": _PATCH}, custom=True),)),
        Step(blocks=(Text("Updated hello.txt and added notes.txt."),)),
    ],
    0.7,
)


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
                    Tool(b.name, fill(b.input, cwd), b.custom, b.namespace) if isinstance(b, Tool) else b
                    for b in s.blocks
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


# ---------------------------------------------------------------- Gemini CLI

GEMINI_STREAM = ["--output-format", "stream-json"]

#: A policy rule denying ``rm`` in the shell tool, written to ``~/.gemini/policies/`` for the denied case.
GEMINI_DENY_RM = '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "rm"\ndecision = "deny"\npriority = 999\n'

GEMINI: list[Scenario] = [
    Scenario(
        "text_thinking",
        ["-p", "scenario text: hello", *GEMINI_STREAM],
        _one(
            "scenario text",
            Step(blocks=(Thinking("**Greeting** the user."), Text("Hello from the fake Gemini server!"))),
        ),
        about="a thought then a streamed answer",
    ),
    Scenario(
        "shell_allowed",
        ["-p", "scenario shell: list the files", *GEMINI_STREAM, "--yolo"],
        _one(
            "scenario shell",
            Step(blocks=(Text("I'll list them."), Tool("run_shell_command", {"command": "ls", "description": "List"}))),
            Step(blocks=(Text("There is one file: hello.txt."),)),
        ),
        about="one run_shell_command round trip under --yolo",
    ),
    Scenario(
        "shell_denied",
        ["-p", "scenario deny: remove hello.txt", *GEMINI_STREAM, "--yolo"],
        _one(
            "scenario deny",
            Step(blocks=(Tool("run_shell_command", {"command": "rm -f hello.txt", "description": "Remove"}),)),
            Step(blocks=(Text("Understood, I left hello.txt alone."),)),
        ),
        env={"_gemini_policy": GEMINI_DENY_RM},
        about="run_shell_command denied by a policy rule (rm), under --yolo",
    ),
    Scenario(
        "file_edit",
        ["-p", "scenario edit: fix hello.txt", *GEMINI_STREAM, "--yolo"],
        _one(
            "scenario edit",
            Step(
                blocks=(
                    Tool(
                        "replace",
                        {
                            "file_path": "{cwd}/hello.txt",
                            "instruction": "Add a comma",
                            "old_string": "hello world",
                            "new_string": "hello, world",
                        },
                    ),
                )
            ),
            Step(blocks=(Text("Fixed the comma."),)),
        ),
        about="a replace edit of hello.txt",
    ),
    Scenario(
        "two_turns_pre",
        ["-p", "scenario twoturns: first question", *GEMINI_STREAM],
        _one("scenario twoturns", Step(blocks=(Text("First answer."),))),
        about="the first turn of two_turns",
    ),
    Scenario(
        "two_turns",
        ["--resume", "latest", "-p", "scenario twoturns: second question", *GEMINI_STREAM],
        _one("scenario twoturns", Step(blocks=(Thinking("About the second question."), Text("Second answer.")))),
        follows="two_turns_pre",
        about="--resume latest with a second prompt, a separate process",
    ),
    Scenario(
        "api_error",
        ["-p", "scenario error400: hello", *GEMINI_STREAM],
        _one("scenario error400", Step(status=400, error_message="fake server: invalid argument", repeat=True)),
        about="HTTP 400 INVALID_ARGUMENT on the turn's request (not retried)",
    ),
]

ACP_GEMINI = _acp_set(
    "gemini",
    "gemini",
    "run_shell_command",
    [
        Step(
            blocks=(
                Tool(
                    "replace",
                    {
                        "file_path": "{cwd}/hello.txt",
                        "instruction": "Add a comma",
                        "old_string": "hello world",
                        "new_string": "hello, world",
                    },
                ),
            )
        ),
        Step(blocks=(Text("Fixed the comma."),)),
    ],
    0.7,
)

# ---------------------------------------------------------------- OpenCode


def _oc(prompt: str, *extra: str) -> list[str]:
    return ["run", "--format", "json", *extra, prompt]


_OC_PATCH = "*** Begin Patch\n*** Update File: hello.txt\n@@\n-hello world\n+hello, world\n*** End Patch"

OPENCODE: list[Scenario] = [
    Scenario(
        "text_thinking",
        _oc("scenario text: hello", "--thinking"),
        _one(
            "scenario text",
            Step(blocks=(Thinking("**Greeting the user**"), Text("Hello from the fake Responses server!"))),
        ),
        about="reasoning (shown with --thinking) then a streamed answer",
    ),
    Scenario(
        "shell_allowed",
        _oc("scenario shell: list the files"),
        _one(
            "scenario shell",
            Step(blocks=(Text("I'll list them."), Tool("bash", {"command": "ls", "description": "List files"}))),
            Step(blocks=(Text("There is one file: hello.txt."),)),
        ),
        about="one bash round trip (bash is allowed by default)",
    ),
    Scenario(
        "shell_denied",
        _oc("scenario deny: remove hello.txt"),
        _one(
            "scenario deny",
            Step(blocks=(Tool("bash", {"command": "rm -f hello.txt", "description": "Remove hello.txt"}),)),
            Step(blocks=(Text("Understood, I left hello.txt alone."),)),
        ),
        env={"_opencode_permission": json.dumps({"bash": {"rm *": "deny"}})},
        about="bash denied by a permission rule (rm *)",
    ),
    Scenario(
        "file_edit",
        _oc("scenario edit: fix hello.txt"),
        _one(
            "scenario edit",
            Step(blocks=(Tool("apply_patch", {"patchText": _OC_PATCH}),)),
            Step(blocks=(Text("Fixed the comma."),)),
        ),
        about="apply_patch (the edit tool OpenCode offers gpt-5) updating hello.txt",
    ),
    Scenario(
        "two_turns_pre",
        _oc("scenario twoturns: first question"),
        _one("scenario twoturns", Step(blocks=(Text("First answer."),))),
        about="the first turn of two_turns",
    ),
    Scenario(
        "two_turns",
        _oc("scenario twoturns: second question", "--session", "{session}"),
        _one("scenario twoturns", Step(blocks=(Text("Second answer."),))),
        follows="two_turns_pre",
        about="--session <two_turns_pre's session> with a second prompt, a separate process",
    ),
    Scenario(
        "api_error",
        _oc("scenario error400: hello"),
        _one("scenario error400", Step(status=400, error_type="invalid_request_error", repeat=True)),
        about="HTTP 400 on the turn's request",
    ),
]
