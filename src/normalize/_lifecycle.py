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

from ._model import Decision, PermissionAuto, PermissionRequest, RequestResolved, UserQuestion

__all__ = ["DECISION_WORDS", "Requests", "decision_of"]

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
        self._open: OrderedDict[str, dict[str, str]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._open)

    def __bool__(self) -> bool:
        return bool(self._open)

    def ask(self, body: PermissionRequest | UserQuestion) -> None:
        """A request is now open."""
        if type(body) is PermissionRequest:
            kinds = {o.id: o.kind for o in body.options}
        else:
            kinds = _QUESTION
        self._open[body.request_id] = kinds
        self._open.move_to_end(body.request_id)
        if len(self._open) > self.limit:
            self._open.popitem(last=False)

    def resolve(self, body: RequestResolved) -> RequestResolved:
        """The request is closed; ``body`` with its decision, when the adapter did not give one."""
        kinds = self._open.pop(body.request_id, None)
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
