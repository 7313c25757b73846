"""Several native sessions on one connection: one Session each.

An ACP connection carries every session the client opens (``params.sessionId``),
a Codex app-server every thread (``params.threadId``).  Each native session is
its own :class:`~normalize.Session`, with its own seq from 1, its own turns, and
its own adapter instance, so that two sessions prompted at once never share a
turn.  Everything here is protocol-agnostic JSON-RPC; an adapter class says
where its protocol names the session (:class:`Routing`).

Rules (docs/adapters.md, "Several sessions on one connection"):

* A request or notification that names a session goes to that session's Session.
  A session named for the first time (``session/load``, a prompt for a session
  opened before the capture began) gets a new Session, unless the first Session
  has not been bound to a session yet: then it is that one.
* A response goes to the Session its request went to (requests are keyed by
  direction and id: ids collide across directions).
* A request that opens a session (``session/new``, ``thread/start``) goes to an
  unbound Session: the first one while it has not been sent an opener, else a
  new one.  Its response names the session, and binds the Session to it.
* The messages a connection starts with, before any session is opened
  (``initialize``), are part of every session on the connection: a new Session is
  fed them first, so each session says the same as if converted alone.
* Any other message (a notification about the connection, a line that is not
  JSON) goes to the Session last routed to.
* The handshake's request (``Routing.handshake``: ``initialize``) sent again after
  the agent accepted the first is held until its answer.  A result begins a new
  connection on the same input (the agent started again, recordings put end to
  end): every Session of the earlier one is closed, then let go, and the input
  goes on as if it began there.  An error leaves the connection as it was.  The client's
  requests and notifications sent after it and before its answer (a client that does not
  wait) are held with it, and come after the answer, in their order: on the new connection
  if one began.  Past :data:`HANDSHAKE` of them, or at the end of the input, they go on,
  with the request, as messages of the connection they were sent on.  The client's answers
  to the agent's requests, and the agent's messages, are not held.
* A session that another one says it spawned (``Routing.spawned_in``: a Codex
  sub-agent's thread, named in its parent's ``item/started``, or in a 0.96 spawn's
  ``receiverThreadIds``, a list) is a new Session
  when its first message comes, linked to the spawning one (``parentId``) and
  announced at once (:meth:`Session.spawned_by`).  One that spoke first (Codex 0.142
  says a spawn after the sub-agent's first notifications) is linked when its parent
  says so, unless it was announced already (its record is out).  When a spawned
  session starts or ends a turn, its parent's adapter is told, right after that
  session's events (:meth:`Session.spawned_turn_started`, :meth:`Session.spawned_turn_ended`):
  a protocol that does not always say when a sub-agent is done (Codex before 0.150),
  or when one runs again on a follow-up, has it said there.  At the end of the input, a
  spawned session still in a turn is closed before its parent, which hears of the
  cut-off turn the same way.
* Memory: the requests awaiting a response are bounded (:data:`PENDING`, the
  oldest forgotten in O(1); its response then goes to the first Session), and so
  is the handshake (:data:`HANDSHAKE` messages).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final

import msgspec
from msgspec import Raw

from ._contract import Adapter, Direction, Routing
from ._errors import InputError, UsageError
from ._model import Origin, SessionEvent, SessionState, TurnComplete, TurnStart, _Core
from ._session import Clock, Session

__all__ = ["HANDSHAKE", "PENDING", "Connection"]

#: Requests awaiting their response, remembered to route the response.
PENDING: Final = 10_000
#: Messages kept from the start of a connection to replay into each new Session.
HANDSHAKE: Final = 64

_NULL: Final = Raw(b"null")

#: what a response says: an ``error``, or not (a result)
_ANSWER: Final[msgspec.json.Decoder[Any]] = msgspec.json.Decoder(
    msgspec.defstruct("_Answer", [("error", Raw | None, None)], frozen=True, gc=False)
)


def _refused(response: bytes) -> bool:
    """Whether a response is an error (or says nothing that can be read) rather than a result."""
    try:
        return bool(_ANSWER.decode(response).error is not None)
    except (msgspec.DecodeError, RecursionError):
        return True


class _View:
    """How a connection reads a message to route it: one decode of its ``id``, ``method``,
    ``params``' session key and the string at each path of the routing tables (``named_in``
    in ``params``, ``opened_by`` in ``result``), everything else skipped.

    ``key`` and ``paths`` say which attributes to read: the session key's in ``params``,
    and each path's from the top of the message (:func:`_walk`).  A message whose value on
    one of the paths is of another kind fails ``decoder`` (a ``msgspec.ValidationError``):
    it is then decoded with ``plain``, which reads no path, and each path is read apart
    (:func:`_at`), as for a routing whose paths do not fit in one view (a path through
    another one's string)."""

    def __init__(self, key: str, paths: tuple[tuple[str, ...], ...]) -> None:
        tree: dict[str, Any] = {"params": {key: None}}
        fits = True
        for path in paths:
            node = tree
            for name in path[:-1]:
                sub = node.setdefault(name, {})
                if sub is None:
                    fits = False
                    break
                node = sub
            else:
                if node.setdefault(path[-1], None) is not None:
                    fits = False
        plain = msgspec.json.Decoder(_message({"params": {key: None}}))
        self.plain: msgspec.json.Decoder[Any] = plain
        self.decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(_message(tree)) if fits and paths else plain
        self.key = "f0"  # the session key, first of params' members
        self.paths: dict[tuple[str, ...], tuple[str, ...]] = (
            {path: _attributes(tree, path) for path in paths} if fits else {}
        )


def _message(tree: dict[str, Any]) -> Any:
    """The Struct of a routing view of ``tree`` (the members of ``params`` and ``result``
    read, each a dict of its own members, or None for a string)."""
    # (not tracked by the cycle collector: a view holds strings and ints only)
    fields: list[tuple[str, Any, None]] = [("id", "int | str | None", None), ("method", "str | None", None)]
    fields += [(name, _object(sub) | None, None) for name, sub in tree.items()]
    return msgspec.defstruct("_Message", fields, frozen=True, gc=False)


def _object(tree: dict[str, Any]) -> Any:
    """The Struct of one object of a routing view: a string or an object per member, read
    by attribute ``f0``, ``f1``... (a member's name need not be an identifier)."""
    fields = [
        (f"f{i}", "str | None" if sub is None else _object(sub) | None, None) for i, sub in enumerate(tree.values())
    ]
    return msgspec.defstruct(
        "_Object", fields, rename={f"f{i}": name for i, name in enumerate(tree)}, frozen=True, gc=False
    )


def _attributes(tree: dict[str, Any], path: tuple[str, ...]) -> tuple[str, ...]:
    """The attributes read along ``path`` in a view of ``tree`` (its first, ``params`` or
    ``result``, by name)."""
    node: Any = tree[path[0]]  # (a dict on the way, None at the end)
    names = [path[0]]
    for name in path[1:]:
        names.append(f"f{list(node).index(name)}")
        node = node[name]
    return tuple(names)


def _walk(view: Any, attributes: tuple[str, ...]) -> str | None:
    """The string a routing view read along a path (None: absent, or empty, as :func:`_at`)."""
    value: Any = view
    for name in attributes:
        value = getattr(value, name)
        if value is None:
            return None
    return value if value else None


#: the routing view of each session key and paths (made once: making a decoder takes about
#: 0.2 ms, and a folder of recordings opens a connection per file)
_VIEWS: Final[dict[tuple[str, tuple[tuple[str, ...], ...]], _View]] = {}


def _view(routing: Routing) -> _View:
    paths = tuple(("params", *p) for p in routing.named_in.values())
    paths += tuple(("result", *p) for p in routing.opened_by.values())
    paths = tuple(dict.fromkeys(paths))
    view = _VIEWS.get((routing.key, paths))
    if view is None:
        view = _VIEWS[routing.key, paths] = _View(routing.key, paths)
    return view


def _path_decoder(path: tuple[str, ...]) -> msgspec.json.Decoder[Any]:
    """A decoder of only what lies along ``path``: an object per name, a string (or a list
    of strings) at its end.

    Everything else is skipped, not built (a ``session/new`` response may carry long
    lists of modes and models); a value of another kind on the way fails the decode."""
    t: Any = str | list[str] | None
    for name in reversed(path):
        t = msgspec.defstruct("_Step", [("v", t, None)], rename={"v": name}, frozen=True, gc=False) | None
    return msgspec.json.Decoder(t)


#: the decoder of each path asked for (the routing tables name a few)
_PATHS: Final[dict[tuple[str, ...], msgspec.json.Decoder[Any]]] = {}


def _value_at(raw: bytes, path: tuple[str, ...]) -> str | list[str] | None:
    decoder = _PATHS.get(path)
    if decoder is None:
        decoder = _PATHS[path] = _path_decoder(path)
    try:
        value: Any = decoder.decode(raw)
    except (msgspec.DecodeError, RecursionError):  # a ValidationError is a DecodeError
        return None
    for _ in path:
        if value is None:
            return None
        value = value.v
    return value if value else None


def _at(raw: bytes, path: tuple[str, ...]) -> str | None:
    """The string at ``path`` in a JSON value, or None (absent, empty, of another kind,
    under a value that is not an object, or the value not JSON)."""
    value = _value_at(raw, path)
    return value if isinstance(value, str) else None


def _ids_at(raw: bytes, path: tuple[str, ...]) -> list[str]:
    """The string, or the strings of the list, at ``path`` in a JSON value (none: absent,
    empty, of another kind, or the value not JSON)."""
    value = _value_at(raw, path)
    if isinstance(value, str):
        return [value]
    return [v for v in value if v] if value is not None else []


def _paths(spec: tuple[str, ...] | tuple[tuple[str, ...], ...]) -> tuple[tuple[str, ...], ...]:
    """A routing table's path, or its several paths, as several."""
    if spec and isinstance(spec[0], tuple):
        return spec
    return (spec,)  # type: ignore[return-value]


class Connection:
    """One input that may carry several native sessions; a :class:`Session` for each.

    The same interface as :class:`Session` (``feed``, ``feed_problem``, ``close``),
    for adapters whose class has a :attr:`~normalize.Adapter.routing`.  ``sessions``
    holds the Sessions of the connection the input now carries (an input may carry
    several connections one after the other: ``Routing.handshake``).
    """

    def __init__(
        self,
        factory: Callable[[], Adapter],
        *,
        first: Adapter | None = None,
        session_id: str | None = None,
        origin: Origin | None = None,
        clock: Clock | None = None,
        strict: bool = False,
    ) -> None:
        adapter = first if first is not None else factory()
        routing = type(adapter).routing
        if routing is None:
            raise UsageError(f"{type(adapter).__name__} does not route sessions (no routing)")
        self._routing: Routing = routing
        # (the routing's members read per message, kept here: compiled, an attribute of this
        # class is read from its struct, one of a msgspec Struct by a generic lookup)
        view = _view(routing)
        self._decoder = view.decoder
        self._plain = view.plain if view.plain is not view.decoder else None
        self._key_name = view.key
        self._opened_by: dict[str, tuple[str, ...]] = routing.opened_by
        self._named_in: dict[str, tuple[str, ...]] = routing.named_in
        #: the attributes of the routing view along each path of the tables (none: read apart)
        self._opened_at = {m: view.paths[("result", *p)] for m, p in routing.opened_by.items() if view.paths}
        self._named_at = {m: view.paths[("params", *p)] for m, p in routing.named_in.items() if view.paths}
        self._factory = factory
        self._opts = (origin, clock, strict)
        #: the adapter's own one-pass decode of its most frequent notifications, if it has one
        self._peek: Callable[[bytes], tuple[str, str | None, object] | None] | None = (
            adapter.peek if type(adapter).peek is not Adapter.peek else None
        )
        #: the adapter is handed the method of each notification (``Adapter.takes_methods``)
        self._hands_methods = type(adapter).takes_methods
        self._closed = False
        #: the request that begins a connection; sent again, it may begin a new one (``_again``)
        self._begins = routing.handshake
        #: that request, sent again after the agent accepted it once, held until its answer
        #: says whether a new connection began: (message, its time, its id)
        self._again: tuple[bytes, str | None, int | str] | None = None
        #: the client's messages sent after that request, held with it: (message, its time)
        self._after: list[tuple[bytes, str | None]] = []
        #: the member naming a spawned session, per notification that can spawn one
        self._spawn_paths = {m: _paths(spec) for m, spec in routing.spawned_in.items()}
        self._spawn_marks = {m: tuple(b'"' + p[-1].encode() + b'"' for p in ps) for m, ps in self._spawn_paths.items()}
        self._begin(Session(adapter, session_id=session_id, origin=origin, clock=clock, strict=strict))

    def _begin(self, first_session: Session) -> None:
        """The state of one connection: its sessions and how messages find them (made again
        when the input begins a new connection)."""
        self.sessions: list[Session] = [first_session]
        self._by_key: dict[str, Session] = {}
        self._bound: dict[int, str] = {}  # id(session) -> key
        #: Sessions sent an opener not yet answered, by id, in the order they were opened (few:
        #: an opener is answered within its round trip)
        self._opening: dict[int, Session] = {}
        self._requests: OrderedDict[tuple[Direction, int | str], tuple[Session, str]] = OrderedDict()
        self._handshake: list[tuple[bytes, Direction, str | None]] = []
        self._in_handshake = True
        #: the handshake's request was answered with a result: the connection began
        self._greeted = False
        self._last = first_session
        self._spawned: OrderedDict[str, Session] = OrderedDict()  # spawned session id -> its parent
        #: the sessions known to be spawned by another: id(session) -> (its parent, its id)
        self._parents: dict[int, tuple[Session, str]] = {}

    @property
    def closed(self) -> bool:
        return self._closed

    # The first session's, for code written for one Session: ``sessions`` has them all
    # (those of the connection now carried).

    @property
    def adapter(self) -> Adapter:
        return self.sessions[0].adapter

    @property
    def session_id(self) -> str | None:
        return self.sessions[0].session_id

    @property
    def state(self) -> SessionState:
        return self.sessions[0].state

    # ------------------------------------------------------------------ public

    def feed(self, message: bytes, from_: Direction = "agent", *, t: str | None = None) -> list[_Core]:
        if self._closed:
            raise UsageError("Connection.feed() after close()")
        return self._feed(message, from_, t)

    def _feed(self, message: bytes, from_: Direction, t: str | None) -> list[_Core]:
        peeked = self._peek(message) if self._peek is not None else None
        method: str | None
        rid: int | str | None
        key: str | None
        view: Any = None  # the routing view, if it read the tables' paths
        if peeked is not None:  # a notification the adapter decoded: it is given the view
            method, key, _ = peeked
            rid = None
        else:
            try:
                view = self._decoder.decode(message)
                read = view
            except msgspec.ValidationError:  # (also a path's value of another kind: read apart)
                read = self._read_plain(message)
            except (msgspec.DecodeError, RecursionError):
                read = None
            if read is None:
                if self._again is not None and from_ == "client":
                    return self._wait(message, t)
                return self._last.feed(message, from_, t=t)  # the Session reports it
            method, rid, params = read.method, read.id, read.params
            key = getattr(params, self._key_name) if params is not None else None
            if rid is not None:
                if method is not None and method == self._begins and from_ == "client" and self._greeted:
                    return self._hold(message, t, rid)
                if method is None and self._again is not None and rid == self._again[2] and from_ == "agent":
                    return self._answered(message, rid, t)
        if self._again is not None and from_ == "client" and (method is not None or rid is None):
            return self._wait(message, t)  # (an answer to the agent's request is the old agent's: not held)
        return self._deliver(method, rid, key, message, from_, t, peeked, view)

    def _read_plain(self, message: bytes) -> Any:
        """The routing view of a message without the tables' paths (read apart, by
        :meth:`_route`): for one whose value on a path is of another kind; None for one that
        is not a JSON-RPC message."""
        if self._plain is None:
            return None
        try:
            return self._plain.decode(message)
        except (msgspec.DecodeError, RecursionError):
            return None

    def _deliver(
        self,
        method: str | None,
        rid: int | str | None,
        key: str | None,
        message: bytes,
        from_: Direction,
        t: str | None,
        peeked: tuple[str, str | None, object] | None,
        view: Any = None,
    ) -> list[_Core]:
        """A message routed by its method, id and session key, and fed to its Session
        (``view``: its routing view, if that read the tables' paths)."""
        out: list[_Core] = []
        target = self._route(method, rid, key, message, from_, out, view)
        marks = self._spawn_marks.get(method) if method is not None else None
        if marks is not None and method is not None and any(message.find(mark) >= 0 for mark in marks):
            out += self._note_spawn(method, message, target)
        if self._in_handshake and len(self._handshake) < HANDSHAKE:
            self._handshake.append((message, from_, t))
        self._last = target
        if peeked is not None:
            target.adapter.given(message, peeked[2])
        elif self._hands_methods and rid is None and method is not None:
            target.adapter.given(message, method)
        if out:
            out += target.feed(message, from_, t=t)
        else:
            out = target.feed(message, from_, t=t)
        if self._parents and id(target) in self._parents:
            out += self._spawned_turns(target, out)
        return out

    def feed_problem(self, error: InputError, *, t: str | None = None) -> list[_Core]:
        if self._closed:
            raise UsageError("Connection.feed_problem() after close()")
        return self._last.feed_problem(error, t=t)

    def close(self) -> list[_Core]:
        if self._closed:
            raise UsageError("Connection.close() called twice")
        self._closed = True
        out = self._release() if self._again is not None else []
        return out + self._close_all()

    # ----------------------------------------------------------------- private

    def _hold(self, message: bytes, t: str | None, rid: int | str) -> list[_Core]:
        """The handshake's request sent again, after an earlier one was answered with a result:
        held until its answer (a request held before it, never answered, goes on as a message
        of the connection it was sent on, with the messages held after it)."""
        out = self._release() if self._again is not None else []
        self._again = (message, t, rid)
        return out

    def _wait(self, message: bytes, t: str | None) -> list[_Core]:
        """A client's request or notification (or a line that is not JSON-RPC) sent while the
        handshake's request is held: held after it (past
        :data:`HANDSHAKE` of them, all go on as messages of the connection they were sent on)."""
        self._after.append((message, t))
        return self._release() if len(self._after) > HANDSHAKE else []

    def _release(self, answer: tuple[bytes, int | str, str | None] | None = None) -> list[_Core]:
        """The held request, then its ``answer`` if it has one, then the client's messages held
        after it, as messages of the connection they now belong to."""
        assert self._again is not None
        assert self._begins is not None
        message, t, rid = self._again
        self._again = None
        after, self._after = self._after, []
        out = self._deliver(self._begins, rid, None, message, "client", t, None)
        if answer is not None:
            answered, answer_id, answered_at = answer
            out += self._deliver(None, answer_id, None, answered, "agent", answered_at, None)
        for held, held_at in after:
            out += self._feed(held, "client", held_at)
        return out

    def _answered(self, message: bytes, rid: int | str, t: str | None) -> list[_Core]:
        """The answer to the held request: a result begins a new connection (every session of
        the earlier one closes, then the request, its answer and the client's messages held
        after it are the new one's first messages); an error (the agent refused it) leaves the
        connection as it was."""
        out: list[_Core] = []
        if not _refused(message):
            out = self._close_all()
            origin, clock, strict = self._opts
            self._begin(Session(self._factory(), origin=origin, clock=clock, strict=strict))
            self._greeted = True  # (known already: its answer is not read again when routed)
        return out + self._release((message, rid, t))

    def _close_all(self) -> list[_Core]:
        """Every session of the connection closed."""
        out: list[_Core] = []
        # a spawned session still in a turn is cut off with the input: it closes before its
        # parent, and the parent says how its sub-agent ended (before the parent's own cut-off)
        children: dict[int, list[Session]] = {}
        for session in self.sessions:
            link = self._parents.get(id(session))
            if link is not None and session.turn_id is not None:
                children.setdefault(id(link[0]), []).append(session)
        if not children:  # (no table per session: a connection may hold many thousands)
            for session in self.sessions:
                out += session.close()
            return out
        path: set[int] = set()
        for session in self.sessions:
            if not session.closed:
                out += self._close(session, children, path)
        return out

    def _close(self, session: Session, children: dict[int, list[Session]], path: set[int]) -> list[_Core]:
        """``session`` closed, after those of its spawned sessions cut off in a turn (``path``:
        the sessions whose children are being closed, against a cycle of parents)."""
        out: list[_Core] = []
        kids = children.get(id(session))
        if kids:
            path.add(id(session))
            for child in kids:
                if not child.closed and id(child) not in path:
                    out += self._close(child, children, path)
        events = session.close()
        out += events
        if id(session) in self._parents:
            out += self._spawned_turns(session, events)
        return out

    def _route(
        self,
        method: str | None,
        rid: int | str | None,
        key: str | None,
        message: bytes,
        from_: Direction,
        out: list[_Core],
        view: Any,
    ) -> Session:
        """The Session of a message: its method, id and the session its params name (``key``);
        ``view``, its routing view if that read the paths of the tables, else None."""
        if method is None:
            if rid is None:
                return self._last
            other: Direction = "client" if from_ == "agent" else "agent"
            sent = self._requests.pop((other, rid), None)
            if sent is None:  # unrecorded: sent before the input began, or forgotten (PENDING)
                return self.sessions[0]
            session, req_method = sent
            if req_method == self._begins and not self._greeted:
                self._greeted = not _refused(message)
            path = self._opened_by.get(req_method)
            if path is not None:
                self._opening.pop(id(session), None)
                at = self._opened_at.get(req_method) if view is not None else None
                key = _walk(view, at) if at is not None else _at(message, ("result", *path))
                if key is not None and key not in self._by_key:
                    self._bind(session, key)  # also when named early by another member: both name it
            return session
        if key is None:
            named = self._named_in.get(method)
            if named is not None:
                at = self._named_at.get(method) if view is not None else None
                key = _walk(view, at) if at is not None else _at(message, ("params", *named))
        if key is not None:
            if self._in_handshake:
                self._in_handshake = False
            known = self._by_key.get(key)
            if known is not None:
                session = known
            else:
                # a session being opened may be named before the opener's response
                # (Codex sends thread notifications first): it is that session
                opening = [s for s in self._opening.values() if id(s) not in self._bound]
                if key in self._spawned or not opening:
                    session = self._unbound(out, opener=False, key=key)
                else:
                    session = opening[-1]
                self._bind(session, key)
        elif method in self._opened_by:
            if self._in_handshake:
                self._in_handshake = False
            session = self._unbound(out, opener=True)
        else:
            session = self._last
        if rid is not None:
            self._requests[(from_, rid)] = (session, method)
            if len(self._requests) > PENDING:
                self._requests.popitem(last=False)
        return session

    def _note_spawn(self, method: str, message: bytes, parent: Session) -> list[_Core]:
        """A session says it spawned another one: remember which, until that one is named;
        one named already is linked now (what it held comes out first)."""
        out: list[_Core] = []
        for path in self._spawn_paths[method]:
            for child in _ids_at(message, ("params", *path)):
                if child in self._spawned:
                    continue
                named = self._by_key.get(child)
                if named is not None:  # it spoke before its parent said it spawned it
                    if named is not parent:
                        out += named.spawned_by(parent.session_id, child)
                        self._parents.setdefault(id(named), (parent, child))
                    continue
                self._spawned[child] = parent
                if len(self._spawned) > PENDING:
                    self._spawned.popitem(last=False)
        return out

    def _spawned_turns(self, child: Session, events: list[_Core]) -> list[_Core]:
        """What the parent of ``child`` says of each turn start and end among ``events``,
        ``child``'s (:meth:`Session.spawned_turn_started`, :meth:`Session.spawned_turn_ended`:
        a sub-agent's run again, or its end, that its protocol left unsaid)."""
        parent, key = self._parents[id(child)]
        out: list[_Core] = []
        for event in events:
            if type(event) is not SessionEvent:
                continue
            body = event.event.body
            if type(body) is TurnComplete:
                out += parent.spawned_turn_ended(key, body, t=event.event.ts)
            elif type(body) is TurnStart:
                out += parent.spawned_turn_started(key, t=event.event.ts)
        return out

    def _unbound(self, out: list[_Core], *, opener: bool, key: str | None = None) -> Session:
        """The first Session while it is free, else a new one fed the handshake.

        A session another one spawned (``key`` noted by :meth:`_note_spawn`) is always a
        new Session, linked to its parent."""
        first = self.sessions[0]
        parent = self._spawned.pop(key, None) if key is not None else None
        if parent is None and id(first) not in self._bound and id(first) not in self._opening:
            session = first
        else:
            origin, clock, strict = self._opts
            session = Session(self._factory(), origin=origin, clock=clock, strict=strict)
            # (fed the same handshake as the others: a session no message announces is told
            # apart by its place, not only by its first message)
            session._salt = b"\0%d" % len(self.sessions)
            if parent is not None and key is not None:
                session.spawned_by(parent.session_id, key)
                self._parents[id(session)] = (parent, key)
            self.sessions.append(session)
            for message, from_, t in self._handshake:
                out += session.feed(message, from_, t=t)
        if opener:
            self._opening[id(session)] = session
        return session

    def _bind(self, session: Session, key: str) -> None:
        self._bound[id(session)] = key
        self._by_key[key] = session
