"""Drive any agent through one API: prompts, answers and cancel in, CoreEvents out.

``normalize.drive(agent, ...)`` runs the agent as a child process and speaks its
native protocol (docs/drive.md); the events are those ``normalize tap`` and
``normalize convert`` give for the same wire.
"""

from ._core import (
    BACKENDS,
    AgentExited,
    AgentNotFound,
    AgentRequestFailed,
    AuthenticationRequired,
    Backend,
    DriveError,
    DriveOptions,
    DriveSession,
    ImageData,
    NotSupported,
    TurnRunning,
    UnknownRequest,
    Waiter,
    Wire,
    backend_class,
    drive,
    option_for,
)
from ._core import (
    Backend as DriveBackend,
)

__all__ = [
    "BACKENDS",
    "AgentExited",
    "AgentNotFound",
    "AgentRequestFailed",
    "AuthenticationRequired",
    "Backend",
    "DriveBackend",
    "DriveError",
    "DriveOptions",
    "DriveSession",
    "ImageData",
    "NotSupported",
    "TurnRunning",
    "UnknownRequest",
    "Waiter",
    "Wire",
    "backend_class",
    "drive",
    "option_for",
]
