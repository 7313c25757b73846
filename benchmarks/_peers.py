"""The upstream SDKs' own parsers, run on the same lines as normalize.

They do less than normalize: they parse and validate, and translate nothing.

* ACP (``agent-client-protocol``): each tap line is ``json.loads``-ed and the
  JSON-RPC message's ``params`` (requests, notifications) or ``result``
  (responses, matched to their request by direction and id) is validated with
  the matching ``acp.schema`` pydantic model.  Methods the schema has no model
  for (extensions such as ``_auth/status_update``) are only ``json.loads``-ed.
* Claude (``claude-agent-sdk``): each stream-json line is ``json.loads``-ed and
  given to ``parse_message``, the SDK's own reader of the CLI's stdout.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

Peer = Callable[[Iterable[bytes]], int]


def _acp() -> Peer:
    import pydantic
    from acp import schema as s

    methods: dict[str, tuple[Any, Any]] = {
        "initialize": (s.InitializeRequest, s.InitializeResponse),
        "authenticate": (s.AuthenticateRequest, s.AuthenticateResponse),
        "session/new": (s.NewSessionRequest, s.NewSessionResponse),
        "session/load": (s.LoadSessionRequest, s.LoadSessionResponse),
        "session/prompt": (s.PromptRequest, s.PromptResponse),
        "session/set_mode": (s.SetSessionModeRequest, s.SetSessionModeResponse),
        "session/set_config_option": (s.SetSessionConfigOptionSelectRequest, s.SetSessionConfigOptionResponse),
        "session/cancel": (s.CancelNotification, None),
        "session/update": (s.SessionNotification, None),
        "session/request_permission": (s.RequestPermissionRequest, s.RequestPermissionResponse),
        "fs/read_text_file": (s.ReadTextFileRequest, s.ReadTextFileResponse),
        "fs/write_text_file": (s.WriteTextFileRequest, s.WriteTextFileResponse),
        "terminal/create": (s.CreateTerminalRequest, s.CreateTerminalResponse),
        "terminal/output": (s.TerminalOutputRequest, s.TerminalOutputResponse),
        "terminal/release": (s.ReleaseTerminalRequest, s.ReleaseTerminalResponse),
        "terminal/wait_for_exit": (s.WaitForTerminalExitRequest, s.WaitForTerminalExitResponse),
        "terminal/kill": (s.KillTerminalRequest, s.KillTerminalResponse),
    }
    invalid = pydantic.ValidationError

    def run(lines: Iterable[bytes]) -> int:
        pending: dict[tuple[str, Any], str] = {}
        failed = 0
        for line in lines:
            tap = json.loads(line)
            msg = tap["msg"]
            method = msg.get("method")
            try:
                if method is not None:
                    if "id" in msg:
                        pending[(tap["from"], msg["id"])] = method
                    models = methods.get(method)
                    if models is not None:
                        models[0].model_validate(msg.get("params"))
                elif "result" in msg:
                    # a response answers a request that came from the other side
                    side = "client" if tap["from"] == "agent" else "agent"
                    asked = pending.pop((side, msg.get("id")), None)
                    models = methods.get(asked) if asked is not None else None
                    if models is not None and models[1] is not None:
                        models[1].model_validate(msg["result"])
            except invalid:
                failed += 1
        return failed

    return run


def _claude() -> Peer:
    from claude_agent_sdk._errors import MessageParseError
    from claude_agent_sdk._internal.message_parser import parse_message

    def run(lines: Iterable[bytes]) -> int:
        failed = 0
        for line in lines:
            try:
                parse_message(json.loads(line))
            except MessageParseError:
                failed += 1
        return failed

    return run


#: protocol -> (the peer's name, a factory of its parser)
PEERS: dict[str, tuple[str, Callable[[], Peer]]] = {
    "acp": ("acp.schema (pydantic)", _acp),
    "claude-stream-json": ("claude_agent_sdk parse_message", _claude),
}
