"""The lifecycle rules every adapter shares: what a request's outcome means.

Everything here is protocol-agnostic.  An adapter says what a native line means
("request R answered with option O", "call C was allowed by a rule"); the rules
below derive the normalized decision the same way for every agent, so that a
consumer asks one question ("was it allowed?") whatever the agent.

Rules (docs/events.md, "Decisions"):

* A permission request's options carry a kind (ACP's vocabulary, which every
  adapter already maps its options to): ``allow_once`` -> ``allow``,
  ``allow_always`` -> ``allow-always``, ``reject_once`` -> ``deny``,
  ``reject_always`` -> ``deny-always``.  The decision of a ``request-resolved``
  is the kind of the option it names (``optionId``), looked up in the request.
* A request nobody answered (``outcome: "cancelled"``) is ``cancel``.
* A question answered is ``answered``.
* When the request was never seen (its line was cut from a capture) or its
  options do not say, the option id itself is read with :data:`DECISION_WORDS`:
  the words agents use for their answers (Codex ``accept`` / ``decline``, Claude
  ``allow`` / ``deny``, hm ``reject``...).  An unknown word leaves the decision
  absent rather than guessing.
* ``permission-auto`` (decided by a rule, a mode, a flag) is read the same way
  from its ``optionId``.
"""

from __future__ import annotations

from collections import OrderedDict

from msgspec import structs

from ._model import Decision, PermissionAuto, PermissionRequest, RequestResolved, ToolCall, UserQuestion

__all__ = ["DECISION_WORDS", "Calls", "Requests", "decision_of"]

#: Option kinds (ACP's vocabulary) and the answer words of each agent, to decisions.
DECISION_WORDS: dict[str, Decision] = {
    # ACP option kinds, which every adapter maps its options to
    "allow_once": "allow",
    "allow_always": "allow-always",
    "reject_once": "deny",
    "reject_always": "deny-always",
    # Claude Code (can_use_tool behaviors, transcript decisions) and generic words
    "allow": "allow",
    "accept": "allow",
    "deny": "deny",
    "reject": "deny",
    # Codex app-server (v2) and exec/rollout (v1) review decisions
    "acceptForSession": "allow-always",
    "acceptWithExecpolicyAmendment": "allow-always",
    "applyNetworkPolicyAmendment": "allow-always",
    "decline": "deny",
    "approved": "allow",
    "approved_for_session": "allow-always",
    "denied": "deny",
    "abort": "deny",
    # hm
    "allow-session": "allow-always",
}


def decision_of(word: str | None) -> Decision | None:
    """The decision an option kind or an agent's answer word stands for, or None."""
    if word is None:
        return None
    return DECISION_WORDS.get(word)


_QUESTION: dict[str, str] = {}  # the options of a question: none, its answers are free


class Requests:
    """Open permission requests and questions, to give each resolution its decision.

    Keeps at most ``limit`` open requests; past it the oldest is forgotten (its
    resolution is then read from the option id alone).  Eviction is O(1).
    """

    __slots__ = ("_open", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        # request id -> (its options' kinds, the sub-agent that asked if one did)
        self._open: OrderedDict[str, tuple[dict[str, str], str | None]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._open)

    def __bool__(self) -> bool:
        return bool(self._open)

    def ask(self, body: PermissionRequest | UserQuestion, subagent_id: str | None = None) -> None:
        """A request is now open."""
        if type(body) is PermissionRequest:
            kinds = {o.id: o.kind for o in body.options}
        else:
            kinds = _QUESTION
        self._open[body.request_id] = (kinds, subagent_id)
        self._open.move_to_end(body.request_id)
        if len(self._open) > self.limit:
            self._open.popitem(last=False)

    def open_requests(self) -> list[tuple[str, str | None]]:
        """The requests still open, oldest first, with the sub-agent that asked."""
        return [(rid, owner) for rid, (_, owner) in self._open.items()]

    def resolve(self, body: RequestResolved) -> RequestResolved:
        """The request is closed; ``body`` with its decision, when the adapter did not give one."""
        kinds = self._open.pop(body.request_id, (None, None))[0]
        if body.decision is not None:
            return body
        decision: Decision | None
        if body.outcome == "cancelled":
            decision = "cancel"
        elif kinds is _QUESTION:
            decision = "answered"
        elif body.option_id is None:
            return body
        else:
            decision = decision_of(kinds.get(body.option_id) if kinds else None) or decision_of(body.option_id)
        return body if decision is None else structs.replace(body, decision=decision)

    @staticmethod
    def auto(body: PermissionAuto) -> PermissionAuto:
        """A permission decided without asking; ``body`` with its decision."""
        if body.decision is not None:
            return body
        decision = decision_of(body.option_id)
        return body if decision is None else structs.replace(body, decision=decision)


class _OpenCall:
    __slots__ = ("category", "subagent_id", "tool", "turn_id")

    def __init__(self, call: ToolCall, subagent_id: str | None, turn_id: str | None) -> None:
        self.tool = call.tool
        self.category = call.category
        self.subagent_id = subagent_id
        self.turn_id = turn_id


class Calls:
    """Tool calls: one ``started`` and one terminal phase each, and what is left open.

    * A second start, or a start or end after the end, is refused (:meth:`refuse` says
      why): a duplicated line (a reconnect that re-sends, a capture written twice) or a
      result read before its call would otherwise be counted twice.  ``updated`` is never
      refused (ACP agents patch finished calls); an end without a start (its start was
      never written) is let through: nothing contradicts it yet.
    * The calls still open when their turn ends (main thread only: a sub-agent may run
      past its parent's turn) and when the input ends are settled by the Session with
      one policy (docs/adapters.md, "The lifecycle the core owns").

    Open calls are bounded by ``limit``; ended ids are remembered (the last ``seen``) to
    recognise duplicates.  Eviction is O(1).
    """

    __slots__ = ("_ended", "_open", "limit", "seen")

    def __init__(self, limit: int, seen: int) -> None:
        self.limit = limit
        self.seen = seen
        self._open: OrderedDict[str, _OpenCall] = OrderedDict()
        self._ended: OrderedDict[str, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._open)

    def refuse(self, call: ToolCall, subagent_id: str | None, turn_id: str | None) -> str | None:
        """Record one phase of a call; why it cannot follow what was seen, or None."""
        cid = call.call_id
        if call.phase == "updated":
            return None
        if cid in self._ended:
            return f"tool call {cid} already finished; a later {call.phase} phase is not reported"
        if call.phase == "started":
            if cid in self._open:
                return f"tool call {cid} already started; a second start is not reported"
            self._open[cid] = _OpenCall(call, subagent_id, turn_id)
            if len(self._open) > self.limit:
                self._open.popitem(last=False)  # forgotten: a later end is let through
            return None
        self._open.pop(cid, None)
        self._ended[cid] = None
        if len(self._ended) > self.seen:
            self._ended.popitem(last=False)
        return None

    def open_in_turn(self, turn_id: str) -> list[tuple[str, _OpenCall]]:
        """The main-thread calls ``turn_id`` started and did not end, oldest first."""
        return [(cid, c) for cid, c in self._open.items() if c.turn_id == turn_id and c.subagent_id is None]

    def open_calls(self) -> list[tuple[str, _OpenCall]]:
        return list(self._open.items())
