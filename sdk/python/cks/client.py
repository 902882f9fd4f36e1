"""A client of the cks hub's HTTP API, in the standard library alone.

``Client.call(name, input)`` calls any operation of the hub by its name, routed
by the operation table generated from the hub's OpenAPI document
(``cks/_operations.py``); the typed methods below are that call with the
operation's fields spelled out. Answers are the hub's JSON objects as dicts,
exactly as ``GET /v1/openapi.json`` describes them.
"""

from __future__ import annotations

import email.utils
import json
import logging
import os
import random
import time
import urllib.error
import urllib.parse
import urllib.request
from decimal import Decimal
from typing import Any, Mapping, Sequence

from ._operations import OPERATIONS
from .errors import CksError, InvalidArgument, Unavailable, error_for

log = logging.getLogger("cks")

DEFAULT_URL = "http://127.0.0.1:7433"

# Statuses retried with backoff: the hub throttles (429) or cannot take the
# call now (503: its database restarts, it is starting or stopping). Nothing
# was done, so the same request may be sent again.
_RETRIED = (429, 503)


class Client:
    """A connection to one hub: its URL, a bearer token, timeouts and the retry policy.

    url and token default to the environment's ``CKS_URL`` and ``CKS_TOKEN``
    (URL ``http://127.0.0.1:7433`` when unset). ``timeout`` bounds each HTTP
    request in seconds (a long-polling claim gets its ``wait_s`` on top). An
    answer 429 or 503, or a connection the hub refused, is retried up to
    ``retries`` times with jittered exponential backoff from ``backoff_s`` to
    ``max_backoff_s``, waiting the answer's ``Retry-After`` when it gives one; a
    connection lost after the request was sent is retried for GET only, since a
    write may have happened. Thread-safe: each call makes its own request.
    """

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        timeout: float = 30.0,
        *,
        retries: int = 4,
        backoff_s: float = 0.5,
        max_backoff_s: float = 10.0,
    ) -> None:
        self.url = (url or os.environ.get("CKS_URL") or DEFAULT_URL).rstrip("/")
        self.token = token if token is not None else os.environ.get("CKS_TOKEN", "")
        self.timeout = timeout
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s

    # -- the generic call -------------------------------------------------

    def call(self, operation: str, input: Mapping[str, Any] | None = None, *, timeout: float | None = None) -> dict[str, Any]:
        """Call the hub's operation named ``operation`` with ``input`` and return its answer.

        Path fields ({task_id}…) are taken from input; for GET and DELETE the
        other fields become the query (a list repeats its name, a boolean is
        true/false, None is left out), for other methods the JSON body. An
        empty answer (204) is ``{}``. Raises a ``CksError`` subclass for an
        error answer, ``Unavailable`` (status 0) when the hub cannot be reached.
        """
        try:
            method, template = OPERATIONS[operation]
        except KeyError:
            raise ValueError(f"cks: no operation {operation!r} in the operation table") from None
        rest = {k: v for k, v in (input or {}).items() if v is not None}
        path = template
        while "{" in path:
            start = path.index("{")
            end = path.index("}", start)
            name = path[start + 1 : end]
            if name not in rest:
                raise InvalidArgument(0, "invalid_argument", f"{operation} needs {name} for its path", name)
            path = path[:start] + urllib.parse.quote(_text(rest.pop(name)), safe="") + path[end + 1 :]
        body: bytes | None = None
        if method in ("GET", "DELETE"):
            query = [(k, _text(item)) for k, v in sorted(rest.items()) for item in (v if isinstance(v, (list, tuple)) else [v])]
            if query:
                path += "?" + urllib.parse.urlencode(query)
        elif rest:
            body = json.dumps(rest).encode()
        return self._send(method, path, body, self.timeout if timeout is None else timeout)

    def _send(self, method: str, path: str, body: bytes | None, timeout: float) -> dict[str, Any]:
        """Send one request, retrying what may be retried, and decode the answer."""
        attempt = 0
        while True:
            try:
                return self._once(method, path, body, timeout)
            except _Retryable as r:
                if attempt >= self.retries:
                    raise r.error from None
                delay = r.retry_after if r.retry_after is not None else self._backoff(attempt)
                log.warning("cks: %s %s: %s; retrying in %.1fs", method, path.split("?")[0], r.error, delay)
                time.sleep(delay)
                attempt += 1

    def _backoff(self, attempt: int) -> float:
        """The wait before retry number attempt+1: exponential, capped, with jitter (half to all of it)."""
        return min(self.max_backoff_s, self.backoff_s * 2.0**attempt) * random.uniform(0.5, 1.0)

    def _once(self, method: str, path: str, body: bytes | None, timeout: float) -> dict[str, Any]:
        req = urllib.request.Request(self.url + path, data=body, method=method)
        req.add_header("Accept", "application/json")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        if body is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            err = _decode_error(e.code, e.read())
            if e.code in _RETRIED:
                raise _Retryable(err, _retry_after(e.headers.get("Retry-After"))) from None
            raise err from None
        except (urllib.error.URLError, OSError) as e:
            reason = e.reason if isinstance(e, urllib.error.URLError) else e
            err = Unavailable(0, "unreachable", f"{method} {self.url}{path.split('?')[0]}: {reason}")
            # A refused connection sent nothing; anything else may have
            # reached the hub, so only a read is sent again.
            if isinstance(reason, ConnectionRefusedError) or method == "GET":
                raise _Retryable(err, None) from None
            raise err from None
        if not raw.strip():
            return {}
        answer = json.loads(raw)
        if not isinstance(answer, dict):
            return {"value": answer}
        return answer

    # -- tasks: create, read, control --------------------------------------

    def create_task(
        self,
        type: str,
        *,
        title: str | None = None,
        description: str | None = None,
        acceptance_criteria: str | None = None,
        payload: Any = None,
        metadata: Mapping[str, Any] | None = None,
        priority: int | None = None,
        max_attempts: int | None = None,
        depends_on: Sequence[int] | None = None,
        parent_id: int | None = None,
        dedupe_key: str | None = None,
        dedupe_once: bool | None = None,
        run_after: str | None = None,
        delay: str | None = None,
        attempt_timeout: str | None = None,
        expires_at: str | None = None,
        concurrency_keys: Sequence[str] | None = None,
        max_tokens: int | None = None,
        max_cost: str | Decimal | None = None,
    ) -> dict[str, Any]:
        """Create a task of ``type``; answers ``{"task": {...}, "created": bool}`` (created false: a dedupe_key matched).
        ``run_after`` (RFC 3339, "2026-12-24T18:00:00Z") or ``delay`` ("10m", "24h") makes a delayed task:
        OPEN with that ``run_after``, claimed by nobody before then. ``attempt_timeout`` ("10m") bounds each
        attempt: past it the hub ends the attempt (its lease revoked, an abort requested) and retries it
        or fails the task by max_attempts, reason "timed out after 10m". ``expires_at`` (RFC 3339): a task not
        completed by then is cancelled. ``concurrency_keys`` (up to 4, such as "openai:gpt-5") put the task
        under the limits set with ``set_limit``: it is not claimed while one of its keys is at its cap.
        ``max_tokens`` and ``max_cost`` (USD, a str or Decimal such as "2.50") are the task's budget: the
        report_usage that reaches it moves the task to NEEDS_INPUT and aborts the attempt (docs/spend.md)."""
        return self.call("create_task", {
            "type": type, "title": title, "description": description,
            "acceptance_criteria": acceptance_criteria, "payload": payload, "metadata": metadata,
            "priority": priority, "max_attempts": max_attempts,
            "depends_on": list(depends_on) if depends_on is not None else None,
            "parent_id": parent_id, "dedupe_key": dedupe_key, "dedupe_once": dedupe_once,
            "run_after": run_after, "delay": delay, "attempt_timeout": attempt_timeout, "expires_at": expires_at,
            "concurrency_keys": list(concurrency_keys) if concurrency_keys is not None else None,
            "max_tokens": max_tokens, "max_cost": _cost(max_cost),
        })

    def get_task(self, task_id: int) -> dict[str, Any]:
        """The task with its history: ``current`` attempt, ``aborts``, ``last_abort``, ``events``…"""
        return self.call("get_task", {"task_id": task_id})

    def list_tasks(
        self,
        *,
        state: str | Sequence[str] | None = None,
        type: str | Sequence[str] | None = None,
        limit: int | None = None,
        cursor: int | None = None,
        **filters: Any,
    ) -> dict[str, Any]:
        """A page of tasks (``{"tasks": [...], "next_cursor": ...}``); other filters (q, parent_id, sort…) by name."""
        return self.call("list_tasks", {"state": state, "type": type, "limit": limit, "cursor": cursor, **filters})

    def stop_task(self, task_id: int, reason: str, *, deadline: str | None = None, wait: bool | None = None) -> dict[str, Any]:
        """Hold the task in STOPPED; a running attempt is asked to abort and, with wait (the default),
        the call waits up to deadline ("30s" unless given) for the worker's confirmation:
        answers ``{"task", "from", "abort": {"outcome": "abort_confirmed"|...}}``."""
        return self.call("stop_task", {"task_id": task_id, "reason": reason, "deadline": deadline, "wait": wait},
                         timeout=self.timeout + _seconds(deadline))

    def update_task(self, task_id: int, **patch: Any) -> dict[str, Any]:
        """Edit the task (title, description, acceptance_criteria, payload, priority, attempt_timeout…); answers ``{"task", "path", ...}``."""
        return self.call("update_task", {"task_id": task_id, **patch},
                         timeout=self.timeout + _seconds(patch.get("deadline")))

    def cancel_task(self, task_id: int, reason: str | None = None) -> dict[str, Any]:
        """Cancel the task for good; answers the task."""
        return self.call("cancel_task", {"task_id": task_id, "reason": reason})

    # -- tasks: the worker protocol ----------------------------------------

    def claim_tasks(
        self,
        types: str | Sequence[str] | None = None,
        *,
        n: int = 1,
        lease_s: float | None = None,
        running: bool = False,
        wait_s: float = 0,
        worker: str | None = None,
        instance_id: str | None = None,
    ) -> dict[str, Any]:
        """Lease up to n OPEN tasks of the types: ``{"tasks": [... each with "lease_token"], "agent_tokens": {...}}``.

        With nothing to claim the hub holds the call up to wait_s (0 to 60)
        seconds; the HTTP timeout is the client's plus wait_s. running claims
        straight into RUNNING (no mark_running call after it). instance_id
        names the process the claim is for (as report_process reports it):
        once that process is asked to stop, the claim takes nothing and a
        waiting one ends at once, with ``"stop_requested": true``. ``tasks``
        is always a list here (the hub may answer null).
        """
        answer = self.call("claim_tasks", {
            "types": list(types) if isinstance(types, (list, tuple)) else types,
            "n": n, "lease_s": lease_s, "running": running or None, "wait_s": wait_s or None, "worker": worker,
            "instance_id": instance_id,
        }, timeout=self.timeout + wait_s)
        answer["tasks"] = answer.get("tasks") or []
        return answer

    def mark_running(self, task_id: int, lease_token: str) -> dict[str, Any]:
        """Move a CLAIMED task to RUNNING under its lease; answers the task."""
        return self.call("mark_running", {"task_id": task_id, "lease_token": lease_token})

    def touch_task(self, task_id: int, lease_token: str) -> dict[str, Any]:
        """Renew the lease (the heartbeat): ``{"held": bool, "abort_requested": bool}``.

        held false: the lease is lost, stop; with abort_requested true an
        operator stopped the attempt and waits for ``confirm_abort``."""
        return self.call("touch_task", {"task_id": task_id, "lease_token": lease_token})

    def complete_task(self, task_id: int, lease_token: str, result: str = "", *, needs_review: bool = False) -> dict[str, Any]:
        """End the attempt with its result (COMPLETED, or NEEDS_REVIEW); ``Conflict`` (lease_lost) if fenced."""
        return self.call("complete_task", {"task_id": task_id, "lease_token": lease_token, "result": result,
                                           "needs_review": needs_review or None})

    def fail_task(self, task_id: int, lease_token: str, reason: str = "", *, retryable: bool = False) -> dict[str, Any]:
        """End the attempt as failed; retryable sends the task back to OPEN (after a backoff) while attempts remain."""
        return self.call("fail_task", {"task_id": task_id, "lease_token": lease_token, "reason": reason,
                                       "retryable": retryable or None})

    def request_input(self, task_id: int, lease_token: str, question: str) -> dict[str, Any]:
        """Ask a person a question: the task goes to NEEDS_INPUT and the lease ends; answers the task."""
        return self.call("request_input", {"task_id": task_id, "lease_token": lease_token, "question": question})

    def confirm_abort(self, task_id: int, lease_token: str) -> dict[str, Any]:
        """Confirm, with the revoked lease token, that the aborted attempt's work stopped; answers the abort."""
        return self.call("confirm_abort", {"task_id": task_id, "lease_token": lease_token})

    def append_output(self, task_id: int, lease_token: str, text: str, stream: str = "") -> dict[str, Any]:
        """Append a chunk of live output (at most 64 KiB of text) to the current attempt."""
        args: dict[str, Any] = {"task_id": task_id, "lease_token": lease_token, "text": text}
        if stream:
            args["stream"] = stream
        return self.call("append_output", args)

    def get_output(self, task_id: int, after: int = 0, limit: int = 0) -> dict[str, Any]:
        """A page of a task's live output after seq ``after`` (pass ``next_after`` for the next)."""
        args: dict[str, Any] = {"task_id": task_id}
        if after:
            args["after"] = after
        if limit:
            args["limit"] = limit
        return self.call("get_output", args)

    def add_evidence(self, task_id: int, lease_token: str, kind: str, body: str) -> dict[str, Any]:
        """Record evidence of the current attempt (a log, a link, a workspace path…)."""
        return self.call("add_evidence", {"task_id": task_id, "lease_token": lease_token, "kind": kind, "body": body})

    def report_usage(
        self,
        task_id: int,
        lease_token: str,
        *,
        model: str | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cost: str | Decimal | None = None,
    ) -> dict[str, Any]:
        """Record what one call of the current attempt spent; ``cost`` in USD, a str or Decimal ("0.0125"),
        never a float. Answers ``{"usage", "spend", "budget_exceeded"?}``: with ``budget_exceeded`` the task's
        budget is used up, the task is NEEDS_INPUT and this attempt aborted (stop working)."""
        return self.call("report_usage", {
            "task_id": task_id, "lease_token": lease_token, "model": model,
            "input_tokens": input_tokens, "output_tokens": output_tokens, "cost": _cost(cost),
        })

    def get_usage(
        self,
        *,
        by: Sequence[str] | None = None,
        since: str | None = None,
        every: str | None = None,
        task_id: int | None = None,
        type: str | None = None,
        key: str | None = None,
        model: str | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """Sums of the tokens and cost reported over ``since`` ("24h", "7d"), grouped ``by`` any of model, type,
        key, task, attempt, agent, principal, and with ``every`` ("1h") by time: ``{rows, total, ...}``."""
        return self.call("get_usage", {
            "by": list(by) if by is not None else None, "since": since, "every": every, "task_id": task_id,
            "type": type, "key": key, "model": model, "limit": limit,
        })

    # -- processes: liveness and remote stop ---------------------------------

    def report_process(
        self,
        process_kind: str,
        instance_id: str,
        *,
        hostname: str | None = None,
        pid: int | None = None,
        liveness_interval_s: float | None = None,
        current_task_id: int | None = None,
        current_task_type: str | None = None,
        task_types: Sequence[str] | None = None,
        exited: bool = False,
    ) -> dict[str, Any]:
        """Report this process alive (or, with exited, gone); answers its row, whose
        ``desired_state`` is ``"stop_requested"`` once someone asked it to stop."""
        return self.call("report_process", {
            "process_kind": process_kind, "instance_id": instance_id, "hostname": hostname, "pid": pid,
            "liveness_interval_s": liveness_interval_s, "current_task_id": current_task_id,
            "current_task_type": current_task_type,
            "task_types": list(task_types) if task_types is not None else None, "exited": exited or None,
        })

    def process_status(self, process_kind: str) -> dict[str, Any]:
        """The newest instance of a process kind: its row (status "not_found", not an error, when none ever reported)."""
        return self.call("process_status", {"process_kind": process_kind})

    def list_processes(
        self,
        *,
        kind: str | Sequence[str] | None = None,
        alive: bool | None = None,
        history: bool | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """A page of process instances: ``{"processes": [...], "next_cursor": ...}``."""
        return self.call("list_processes", {"kind": kind, "alive": alive, "history": history, "limit": limit, "cursor": cursor})

    def request_process_stop(self, process_kind: str) -> dict[str, Any]:
        """Ask the kind's alive instance to drain and exit: ``{"found": bool, "instance_id", "process_kind"}``."""
        return self.call("request_process_stop", {"process_kind": process_kind})


class _Retryable(Exception):
    """A failed attempt that may be sent again: the error to raise when retries run out."""

    def __init__(self, error: CksError, retry_after: float | None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


def _text(v: Any) -> str:
    """A value as path or query text: booleans as true/false, the rest as str()."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _decode_error(status: int, raw: bytes) -> CksError:
    """The typed error of an error answer, its body read as the hub writes it."""
    try:
        e = json.loads(raw)["error"]
        return error_for(status, str(e["code"]), str(e["message"]), e.get("field"))
    except (ValueError, KeyError, TypeError):
        return error_for(status, f"http_{status}", raw.decode("utf-8", "replace").strip()[:500])


def _retry_after(value: str | None) -> float | None:
    """A Retry-After header in seconds (seconds or an HTTP date), at most 60; None when absent or bad."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    return min(60.0, max(0.0, seconds))


def _seconds(duration: Any) -> float:
    """A Go-style duration the hub takes ("30s", "2m", "1500ms") in seconds; 30 when unset or unread."""
    if not duration:
        return 30.0
    text = str(duration)
    for suffix, scale in (("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0)):
        if text.endswith(suffix):
            try:
                return float(text[: -len(suffix)]) * scale
            except ValueError:
                break
    return 600.0


def _cost(v: str | Decimal | None) -> str | None:
    """A cost as the hub takes it: an exact decimal string. A float is refused: it rounds."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, Decimal):
        return format(v, "f")
    raise TypeError(f"a cost is a str or a Decimal such as \"0.0125\", not {type(v).__name__} (floats round)")
