"""Fake agents for the live I/O tests: scripts that play captures as an agent would."""
