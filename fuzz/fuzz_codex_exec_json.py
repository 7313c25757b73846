# Invariant: any bytes fed as lines to a Session over the codex-exec-json adapter never raise anything in default mode, and only normalize.NormalizeError in strict mode; every event encodes to valid JSON and seq has no gap.  # noqa: E501
"""Coverage-guided fuzzing of the codex-exec-json adapter, seeded from its captures (see README.md)."""

from _harness import main

if __name__ == "__main__":
    main("codex-exec-json")
