"""The built-in adapters, one module per native protocol.

Each is registered through the ``normalize.adapters`` entry-point group in
pyproject.toml, like any third-party adapter; the core never imports them.
"""
