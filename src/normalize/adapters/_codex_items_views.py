"""The Struct :mod:`normalize.adapters._codex_items` describes a patch's files with
(:class:`Change`); a module apart, interpreted in the compiled build (docs/adapters.md).
``_codex_items`` gives it under the same name.
"""

from __future__ import annotations

from msgspec import Struct

__all__ = ["Change"]


class Change(Struct, frozen=True, kw_only=True):
    """One file of a patch, whatever the surface.

    ``kind``: ``add`` | ``delete`` | ``update``; ``diff``: for an update the
    unified diff (hunks), for an add the new file's content, for a delete the old
    content (as Codex sends them); ``move_path``: the new path of a move.
    """

    path: str
    kind: str
    diff: str | None = None
    move_path: str | None = None
