"""A scripted ACP agent on stdio for the ACP backend's tests (standard library only).

It numbers its own requests from 0, as real agents do (their ids collide with the
client's).  The first word of a prompt chooses the script:

* ``write NAME TEXT``: an edit tool call, permission asked; allowed: ``fs/write_text_file``
  of ``<cwd>/NAME`` then ``fs/read_text_file`` of it, and the text read is said.
* ``shell COMMAND``: an execute tool call, permission asked; allowed: ``terminal/create``
  (``sh -c COMMAND``), ``terminal/wait_for_exit``, ``terminal/output``, ``terminal/release``,
  and the output and exit code are said.
* ``spawn COMMAND``: ``terminal/create`` (``sh -c COMMAND``), never waited for nor released.
* ``read PATH``: ``fs/read_text_file`` of PATH, no permission; says the content or the error.
* ``slow``: a message chunk, a permission request, then waits for ``session/cancel`` (and the
  client's answer to the request) and ends the turn ``cancelled``.
* ``question``: ``elicitation/create`` with a form (a choice ``color``, an integer ``count``); says the answer.
* ``unknown``: a request of a method no client has (``_fake/unknown``); says the error code.
* ``die``: a chunk, then exits 3 mid-turn.
* ``images``: says how many image blocks the prompt had.
* anything else: echoed.

Options: ``--auth`` answers ``session/new`` with -32000 (authentication required);
``--no-image`` advertises no image prompts.  ``session/load`` replays the prompts of a
session this process made (none: a fresh process replays one scripted exchange).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

AUTH = "--auth" in sys.argv
IMAGES = "--no-image" not in sys.argv
SID = "fake-acp-session-1"
state: dict[str, Any] = {"next": 0, "cwd": None, "cancelled": False, "mode": "ask", "model": "fake-small"}
inbox: list[dict[str, Any]] = []


def send(msg: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **msg}) + "\n")
    sys.stdout.flush()


def update(variant: str, **fields: Any) -> None:
    send({"method": "session/update", "params": {"sessionId": SID, "update": {"sessionUpdate": variant, **fields}}})


def say(text: str, mid: str = "m-1") -> None:
    update("agent_message_chunk", content={"type": "text", "text": text}, messageId=mid)


def read() -> dict[str, Any] | None:
    if inbox:
        return inbox.pop(0)
    line = sys.stdin.readline()
    return json.loads(line) if line else None


def call(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A request to the client; the messages read while waiting are kept for later."""
    rid = state["next"]
    state["next"] += 1
    send({"id": rid, "method": method, "params": {"sessionId": SID, **params}})
    kept: list[dict[str, Any]] = []
    while True:
        msg = read()
        if msg is None:
            sys.exit(0)
        if "method" not in msg and msg.get("id") == rid:
            inbox[:0] = kept
            return msg
        if msg.get("method") == "session/cancel":
            state["cancelled"] = True
        else:
            kept.append(msg)


def permission(call_id: str, title: str, kind: str, raw_input: dict[str, Any]) -> bool:
    update("tool_call", toolCallId=call_id, title=title, kind=kind, status="pending", rawInput=raw_input)
    options = [
        {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
        {"optionId": "always", "name": "Always allow", "kind": "allow_always"},
        {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
    ]
    answer = call("session/request_permission", {"toolCall": {"toolCallId": call_id}, "options": options})
    outcome = (answer.get("result") or {}).get("outcome") or {}
    return outcome.get("optionId") in ("allow", "always")


def turn(rid: Any, text: str, blocks: list[dict[str, Any]]) -> None:
    word, _, rest = text.partition(" ")
    stop = "end_turn"
    if word == "write":
        name, _, content = rest.partition(" ")
        path = os.path.join(state["cwd"], name)
        if permission("call-w", f"Write {name}", "edit", {"path": path}):
            wrote = call("fs/write_text_file", {"path": path, "content": content})
            if "error" in wrote:
                update("tool_call_update", toolCallId="call-w", status="failed")
                say(f"refused {wrote['error']['code']}: {wrote['error']['message']}")
            else:
                got = call("fs/read_text_file", {"path": path})
                update("tool_call_update", toolCallId="call-w", status="completed")
                say(f"read back: {got['result']['content']}")
        else:
            update("tool_call_update", toolCallId="call-w", status="failed")
            say("not written")
    elif word == "shell":
        if permission("call-s", rest, "execute", {"command": rest}):
            update("tool_call_update", toolCallId="call-s", status="in_progress")
            made = call("terminal/create", {"command": "sh", "args": ["-c", rest], "outputByteLimit": 1000})
            tid = made["result"]["terminalId"]
            update("tool_call_update", toolCallId="call-s", content=[{"type": "terminal", "terminalId": tid}])
            code = call("terminal/wait_for_exit", {"terminalId": tid})["result"]["exitCode"]
            out = call("terminal/output", {"terminalId": tid})["result"]
            call("terminal/release", {"terminalId": tid})
            update("tool_call_update", toolCallId="call-s", status="completed")
            cut = " (truncated)" if out["truncated"] else ""
            say(f"exit {code}{cut}: {out['output']}")
        else:
            update("tool_call_update", toolCallId="call-s", status="failed")
            say("not run")
    elif word == "spawn":
        made = call("terminal/create", {"command": "sh", "args": ["-c", rest]})
        say(f"started {made['result']['terminalId']}")
    elif word == "read":
        got = call("fs/read_text_file", {"path": rest})
        if "error" in got:
            say(f"refused {got['error']['code']}: {got['error']['message']}")
        else:
            say(f"content: {got['result']['content']}")
    elif word == "slow":
        say("working...")
        allowed = permission("call-x", "rm -rf build", "execute", {"command": "rm -rf build"})
        while not state["cancelled"]:
            msg = read()
            if msg is None:
                sys.exit(0)
            state["cancelled"] = msg.get("method") == "session/cancel"
        stop = "cancelled" if not allowed else "end_turn"
    elif word == "question":
        schema = {
            "type": "object",
            "properties": {
                "color": {"type": "string", "title": "Which color?", "enum": ["red", "blue"]},
                "count": {"type": "integer", "title": "How many?"},
            },
        }
        got = call("elicitation/create", {"message": "Pick one", "mode": "form", "requestedSchema": schema})
        result = got.get("result") or {}
        say(f"{result.get('action')}: {json.dumps(result.get('content'))}")
    elif word == "unknown":
        got = call("_fake/unknown", {})
        say(f"error {got['error']['code']}")
    elif word == "die":
        say("about to fail")
        sys.stderr.write("fake_acp: dying mid-turn\n")
        sys.stderr.flush()
        os._exit(3)
    elif word == "images":
        say(f"{sum(1 for b in blocks if b.get('type') == 'image')} image(s)")
    else:
        say(f"echo: {text}")
    send({"id": rid, "result": {"stopReason": stop}})


def config() -> list[dict[str, Any]]:
    modes = [{"value": "ask", "name": "Ask"}, {"value": "auto", "name": "Auto"}]
    models = [{"value": "fake-small", "name": "Small"}, {"value": "fake-large", "name": "Large"}]
    return [
        {
            "id": "mode",
            "name": "Mode",
            "category": "mode",
            "type": "select",
            "currentValue": state["mode"],
            "options": modes,
        },
        {
            "id": "model",
            "name": "Model",
            "category": "model",
            "type": "select",
            "currentValue": state["model"],
            "options": models,
        },
    ]


def main() -> None:
    while (msg := read()) is not None:
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if method == "initialize":
            caps = {"loadSession": True, "promptCapabilities": {"image": IMAGES}}
            methods = [{"id": "fake-login", "name": "Fake login"}] if AUTH else []
            info = {"name": "fake-acp", "version": "1.0.0"}
            send(
                {
                    "id": rid,
                    "result": {
                        "protocolVersion": 1,
                        "agentCapabilities": caps,
                        "authMethods": methods,
                        "agentInfo": info,
                    },
                }
            )
        elif method in ("session/new", "session/load"):
            if AUTH:
                send({"id": rid, "error": {"code": -32000, "message": "Authentication required"}})
                continue
            state["cwd"] = params.get("cwd")
            if method == "session/load":
                update("user_message_chunk", content={"type": "text", "text": "an earlier question"}, messageId="u-0")
                say("an earlier answer", mid="m-0")
                send({"id": rid, "result": {"configOptions": config()}})
            else:
                send({"id": rid, "result": {"sessionId": SID, "configOptions": config()}})
        elif method == "session/set_config_option":
            state[params["configId"]] = params["value"]
            update("config_option_update", configOptions=config())
            send({"id": rid, "result": {}})  # the options only in the update, as real agents echo a mode
        elif method == "session/prompt":
            state["cancelled"] = False
            blocks = params.get("prompt") or []
            turn(rid, blocks[0]["text"], blocks)
        elif method == "session/cancel":
            state["cancelled"] = True
        elif rid is not None and method is not None:
            send({"id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}})


main()
