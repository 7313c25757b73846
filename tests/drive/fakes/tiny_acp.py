"""A tiny scripted ACP agent on stdio, for the drive core's tests.

Prompt texts choose the script: ``ask`` asks permission for a shell call and says
what it got; ``slow`` runs until ``session/cancel``; ``die`` exits 3 mid-turn;
anything else is echoed back as the reply.
"""

import json
import sys
from typing import Any

SID = "sess-tiny-1"


def send(msg: Any) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def update(what: str, **fields: Any) -> None:
    send(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": SID, "update": {"sessionUpdate": what, **fields}},
        }
    )


def say(text: str) -> None:
    update("agent_message_chunk", content={"type": "text", "text": text})


def read() -> Any:
    line = sys.stdin.readline()
    return json.loads(line) if line else None


running: Any = None  # the id of the prompt running
while (msg := read()) is not None:
    method = msg.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}}})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": SID}})
    elif method == "session/cancel" and running is not None:
        send({"jsonrpc": "2.0", "id": running, "result": {"stopReason": "cancelled"}})
        running = None
    elif method == "session/prompt":
        text = msg["params"]["prompt"][0]["text"]
        running = msg["id"]
        if text == "slow":
            say("working...")
            continue
        if text == "die":
            say("about to fail")
            sys.stderr.write("tiny agent: boom\n")
            sys.exit(3)
        if text == "ask":
            update("tool_call", toolCallId="call-1", title="touch x", kind="execute", status="pending")
            options = [
                {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                {"optionId": "no", "name": "Reject", "kind": "reject_once"},
            ]
            params = {"sessionId": SID, "toolCall": {"toolCallId": "call-1"}, "options": options}
            send({"jsonrpc": "2.0", "id": 100, "method": "session/request_permission", "params": params})
            answer = read()
            while answer is not None and answer.get("id") != 100:
                answer = read()
            outcome = (answer or {}).get("result", {}).get("outcome", {})
            chosen = outcome.get("optionId", outcome.get("outcome"))
            update("tool_call_update", toolCallId="call-1", status="completed" if chosen == "yes" else "failed")
            say(f"chosen: {chosen}")
        else:
            say(f"echo: {text}")
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"stopReason": "end_turn"}})
        running = None
