"""cks: a Python client and worker for the cks hub (standard library only).

    from cks import Client, Worker

``Client`` calls the hub's HTTP API; ``Worker`` claims tasks of given types,
runs your handlers, heartbeats their leases, honours operators' stops and
reports its liveness. See docs/sdk-python.md.
"""

from __future__ import annotations

from .client import Client
from .errors import (
    CksError,
    Conflict,
    Forbidden,
    InvalidArgument,
    NotFound,
    RateLimited,
    TooLarge,
    Unauthorized,
    Unavailable,
)
from .worker import PermanentFailure, Task, TaskContext, Worker

__all__ = [
    "CksError", "Client", "Conflict", "Forbidden", "InvalidArgument", "NotFound", "PermanentFailure",
    "RateLimited", "Task", "TaskContext", "TooLarge", "Unauthorized", "Unavailable", "Worker",
]
__version__ = "0.1.0"
