"""The adapter contract: what a translator of one native protocol provides.

An adapter is a pure object.  ``feed(message, from_)`` takes one native message
(the wire line, bytes, byte-exact) and the side that wrote it, and returns what
it means as a list of items; ``close()`` says the input ended.  No I/O, no
clock, no logging, no global state, no counting: the :class:`~normalize.Session`
wrapping it owns seq, turn ids, origin and timestamps.

Items an adapter may return:

* a :class:`~normalize.Body` (``ToolCall(...)``): one normalized event, from
  the message being fed, with the Session's defaults;
* :class:`Emit`: a body with per-event details (sub-agent, origin, a
  synthesized event with ``protocol: "core"``);
* :class:`Source`: the native method and timestamp of the message being fed;
  put it first, it applies to the items after it;
* :class:`Passthrough`: the message is kept untranslated as ``session.update``;
* :class:`InTurn`: the message belongs to a turn: the Session starts one (a
  ``turn-start`` from this message) when none is open, for protocols that do not
  say where a turn starts;
* :class:`Problem`: bad input; the Session raises it in strict mode and turns it
  into an ``error`` event otherwise;
* any other CoreEvent (``MessageAccepted``, ``SessionCreated``, ...) with
  ``session_id=""``: the Session fills in its own id.

Adapters register under the entry-point group ``normalize.adapters``
(``name = "package.module:Class"``), and are found by protocol name.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal, Union

from msgspec import Struct

from ._errors import InputError, UsageError
from ._lifecycle import Calls
from ._model import Body, CoreEvent, Origin, TurnComplete

__all__ = [
    "Adapter",
    "Direction",
    "Emit",
    "InTurn",
    "Item",
    "Passthrough",
    "Problem",
    "Routing",
    "Sample",
    "Source",
]

Direction = Literal["agent", "client"]

#: One message of a detection sample: its bytes and who wrote it.
Sample = tuple[bytes, Direction]


class Emit(Struct, frozen=True, kw_only=True, gc=False):
    """A body plus the envelope details only the adapter knows."""

    body: Body
    subagent_id: str | None = None
    origin: Origin | None = None
    #: the native timestamp of this event, when it differs from the message's
    ts: str | None = None
    #: synthesized by the library, not carried by the message: ``protocol: "core"``
    synthetic: bool = False
    #: with a ``tool-call`` body: what the adapter attaches to the call in the core's table
    #: (``Adapter.calls``), read back at a later phase; an ``updated`` phase may replace it
    note: Any = None


class Source(Struct, frozen=True, kw_only=True, gc=False):
    """The native method/type and timestamp of the message being fed."""

    method: str | None = None
    ts: str | None = None


class InTurn(Struct, frozen=True, kw_only=True, gc=False):
    """The message being fed belongs to a turn: a ``turn-start`` from it when none is open.

    For protocols that do not mark a turn's start (a stored file whose prompt was cut, a
    stream that begins mid-turn): the adapter says what the message is part of, and the
    Session, which knows whether a turn is open, decides; adapters keep no turn flag.
    """


class Passthrough(Struct, frozen=True, kw_only=True, gc=False):
    """Keep the message being fed as ``session.update``, untranslated."""

    method: str | None = None


class Problem(Struct, frozen=True, kw_only=True):
    """Bad input found while translating.  Raised in strict mode, an error event otherwise."""

    error: InputError
    subagent_id: str | None = None
    #: ``replay`` for bad input found inside replayed history (ACP ``session/load``)
    origin: Origin | None = None


Item = Union[Body, Emit, Source, InTurn, Passthrough, Problem, CoreEvent]


class Routing(Struct, frozen=True, kw_only=True):
    """Where a JSON-RPC protocol names the native session a message belongs to.

    A connection of such a protocol may carry several sessions; each becomes its own
    Session with its own adapter instance (docs/adapters.md, "Several sessions on one
    connection").

    * ``key``: the ``params`` member naming the session (ACP ``sessionId``, Codex
      ``threadId``);
    * ``opened_by``: the requests that open a session, each with the path, in the
      response's ``result``, of the new session's id;
    * ``named_in``: notifications that name their session elsewhere in ``params``;
    * ``spawned_in``: notifications by which a session says it spawned another one (a
      sub-agent's thread), with the path in ``params`` of the new session's id (or of a
      list of ids; or several such paths): that session is linked to its parent
      (``parentId``, and its events' ``subagentId``);
    * ``handshake``: the client's request that begins a connection (``initialize``).
      Sent again after an earlier one was answered with a result, and answered with a
      result itself, it begins a new connection on the same input (the agent was started
      again, or recordings were put end to end): every session of the earlier one closes
      first, and the new connection's sessions are fed its own handshake.
    """

    key: str
    opened_by: dict[str, tuple[str, ...]]
    named_in: dict[str, tuple[str, ...]] = {}
    spawned_in: dict[str, tuple[str, ...] | tuple[tuple[str, ...], ...]] = {}
    handshake: str | None = None


class Adapter:
    """Base class of adapters.  Subclasses override :meth:`feed` and usually :meth:`close`.

    Class attributes describe the protocol:

    * ``protocol``: the ``native.protocol`` name (and the registry name);
    * ``agent``: the agent's name until the stream says better (instances may
      update ``self.agent`` as they learn it, e.g. from an ``initialize``);
    * ``routing``: a :class:`Routing` when one connection may carry several
      native sessions (a new instance of the adapter is made for each);
    * ``stored``: the format is a stored session file, so its events are
      ``origin: "replay"``;
    * ``announces_session``: the adapter returns a ``SessionCreated`` (or
      ``SessionResumed``) within the first few messages, with the native session
      id; the Session holds events back until then so that ``session.created``
      comes first with the whole record (bounded by ``HOLD_LIMIT`` messages);
    * ``companions``: glob patterns, relative to a session file's folder, of
      files that belong to the same session (``{stem}`` is the file's name
      without ``.jsonl``).  They are read after the main file, in name order,
      and are not sessions of their own.
    * ``owned``: glob patterns of files in a session file's folder that belong to
      the session :meth:`owner_of` names (Claude Code 2.0.x ``agent-*.jsonl``
      beside every session of a project); read after the ``companions``;
    * ``interleave``: the session's files (main, companions, owned) are read
      merged in time order (:meth:`time_of`), each file's own order kept, so
      that a sub-agent's lines come inside the parent's turn, where they happened,
      as the live stream says them;
    * ``default_paths``: where the agent keeps its stored sessions (``~`` for
      the home folder), read by the commands given no path;
    * ``decodes_whole``: :meth:`feed` returns only for a message it decoded whole
      with msgspec (a view decodes every byte of the line, the fields it skips
      included), and raises ``MalformedMessage`` for any other: each message it
      returns items for is JSON, so the Session keeps one untranslated
      (``session.update``) without decoding it again to check;
    * ``takes_methods``: for an adapter with a ``routing``: its Connection hands it the
      method of each notification it read to route it (:meth:`given`, the view a ``str``).
    """

    protocol: ClassVar[str] = ""
    #: where the protocol names its sessions, when one connection may carry several
    routing: ClassVar[Routing | None] = None
    stored: ClassVar[bool] = False
    announces_session: ClassVar[bool] = False
    companions: ClassVar[tuple[str, ...]] = ()
    owned: ClassVar[tuple[str, ...]] = ()
    interleave: ClassVar[bool] = False
    default_paths: ClassVar[tuple[str, ...]] = ()
    decodes_whole: ClassVar[bool] = False
    takes_methods: ClassVar[bool] = False
    #: how many ended calls stay readable (``self.calls.ended(call_id)``), for a protocol whose
    #: agents patch a call after its end (ACP: ``ENDED_CALLS``); none by default
    ended_calls: ClassVar[int] = 0
    agent: str = "unknown"
    #: the evictions of the adapter's bounded tables, queued for its Session (adapters/_limits.py);
    #: None until its Session links them (a class default: asking an instance that has none
    #: raises and catches an AttributeError, for every new Session's adapter)
    _evicted: list[Any] | None = None

    def __init__(self) -> None:
        self._closed = False
        #: the tool calls open in this adapter's session: the core's table, kept by the
        #: Session that wraps the adapter; adapters read it and never write it
        #: (docs/adapters.md, "The lifecycle the core owns")
        self.calls = Calls(ended=type(self).ended_calls)

    @classmethod
    def time_of(cls, message: bytes) -> str | None:
        """The native time of a message, for ``interleave``: RFC 3339 UTC as the agent
        writes it (compared as text), or None when the message has none."""
        return None

    @classmethod
    def owner_of(cls, path: Path) -> str | None:
        """The name (without ``.jsonl``) of the session file an ``owned`` file belongs to, if any."""
        return None

    @classmethod
    def detect(cls, sample: Sequence[Sample]) -> float:
        """How sure (0..1) that ``sample``, the first messages of an input, is this protocol."""
        return 0.0

    def feed(self, message: bytes, from_: Direction = "agent") -> list[Item]:
        """Translate one native message."""
        raise NotImplementedError

    def close(self) -> list[Item]:
        """The input ended: settle what is open (report unfinished calls)."""
        self._closed = True
        return []

    # a connection of several sessions (``routing``) --------------------------

    def peek(self, message: bytes) -> tuple[str, str | None, object] | None:
        """Optional, for an adapter with a ``routing``: a message this adapter reads in one
        decode, decoded ahead so that its Connection routes it without decoding it again.

        Return ``(method, session key, view)`` for a notification (a message without an
        ``id``) whose method and session key (the params' ``routing.key``, None if absent)
        the view holds; None for any other message, which the Connection then decodes
        itself.  The Connection hands ``view`` to the adapter of the session the message
        goes to (:meth:`given`), right before that adapter is fed the same message.  Called
        on one adapter of the connection for every message: it keeps no state.
        """
        return None

    def given(self, message: bytes, view: object) -> None:
        """The view :meth:`peek` made of ``message``, or (``takes_methods``) the method of a
        notification (a ``str``) its Connection read: what :meth:`feed` of the same message
        (the same object) may use instead of decoding it again; any other message is
        decoded as usual."""

    def spawned_turn_ended(self, native_id: str, turn: TurnComplete) -> list[Item]:
        """Optional, for an adapter with a ``routing``: the session this adapter's session
        spawned (``native_id``, as :attr:`Routing.spawned_in` named it) ended a turn; ``turn``
        is the body that session's own Session gave.  Called by the Connection right after
        that session's events of the turn's end.

        For a protocol that does not always say itself when a sub-agent is done: return the
        items that say it (``Emit(..., synthetic=True)``: the core infers them), or none when
        the protocol says it, or the sub-agent is not one this session holds running."""
        return []

    def spawned_turn_started(self, native_id: str) -> list[Item]:
        """Optional, for an adapter with a ``routing``: the session this adapter's session
        spawned (``native_id``) started a turn.  Called by the Connection right after that
        session's events of the turn's start.

        For a protocol that does not say when a sub-agent it said ended runs again (a
        follow-up the parent sent it): return the items that say it (a ``subagent``
        ``resumed``, ``Emit(..., synthetic=True)``), or none."""
        return []

    # helpers for subclasses -------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise UsageError(f"{type(self).__name__}.feed() after close()")
