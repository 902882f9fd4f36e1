"""Typed errors for the hub's error answers.

The hub answers a refused call with a 4xx or 5xx status and the body
``{"error": {"code": ..., "message": ..., "field": ...}}`` (``field`` only for
invalid_argument, naming the input field at fault). ``error_for`` maps such an
answer to the subclass of ``CksError`` for its status, so callers can catch what
they can act on (``Conflict`` for a lost lease, ``NotFound``…) and read the rest.
"""

from __future__ import annotations


class CksError(Exception):
    """An error answer of the hub, or a call that could not reach it (status 0)."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None) -> None:
        text = f"{status} {code}: {message}" if status else f"{code}: {message}"
        super().__init__(text)
        self.status = status
        self.code = code
        self.message = message
        self.field = field


class InvalidArgument(CksError):
    """400: the input was refused; ``field`` names the input field at fault when the hub said."""


class Unauthorized(CksError):
    """401: no token, or one the hub does not know (revoked, expired)."""


class Forbidden(CksError):
    """403: the token lacks the permission the call needs."""


class NotFound(CksError):
    """404: no such task, process, object…"""


class Conflict(CksError):
    """409: the state does not admit the call; code ``lease_lost`` when the caller's lease was fenced."""


class TooLarge(CksError):
    """413: the request body is larger than the hub takes."""


class RateLimited(CksError):
    """429: the hub throttles the caller; the client retries these before raising."""


class Unavailable(CksError):
    """503 (or a connection failure, status 0): the hub or its database cannot take the call now; retried before raising."""


_BY_STATUS: dict[int, type[CksError]] = {
    400: InvalidArgument,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: TooLarge,
    429: RateLimited,
    503: Unavailable,
}


def error_for(status: int, code: str, message: str, field: str | None = None) -> CksError:
    """The typed error for an answer with this status (``CksError`` itself for others)."""
    return _BY_STATUS.get(status, CksError)(status, code, message, field)
