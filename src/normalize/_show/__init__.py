"""``normalize show``: sessions as a page people would rather look at than read.

Reads normalized events only (the public API), never an adapter, so every agent
is shown by the same code.  The modules, imported only when ``show`` runs (the
page needs markdown-it-py, the terminal rich: the ``show`` extra):

* ``_build``: events -> session, turn and item views (the one place that interprets events);
* ``_html``: views -> one self-contained, escaped HTML page, and a folder's index page;
* ``_terminal``: views -> the terminal, with rich;
* ``_live``: a page served on 127.0.0.1 and updated by server-sent events (``--follow``);
* ``_read``: inputs (native files, folders, normalized JSONL) -> views;
* ``_cli``: the ``show`` command.
"""
