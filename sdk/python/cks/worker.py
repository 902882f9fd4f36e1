"""A worker process: claims tasks of its types, runs handlers, honours stops, reports liveness.

    worker = Worker(Client(), kind="summarizer", concurrency=4)

    @worker.task("summarize")
    def summarize(task: Task, ctx: TaskContext) -> dict:
        return {"summary": task.payload["text"][:100]}

    worker.run()

The worker follows the hub's worker protocol (claim_tasks describes it): it
long-polls ``claim_tasks`` for as many tasks as it has free slots, straight into
RUNNING; renews each lease with ``touch_task`` every third of the lease; ends
each attempt with ``complete_task`` (the handler's return value) or
``fail_task`` (its exception). An operator's ``stop_task`` reaches it through
the heartbeat: the handler is told (``ctx.aborted`` set for a sync handler, the
coroutine cancelled for an async one) and, once it has returned, the worker
confirms the abort with ``confirm_abort``. Every ``liveness_interval_s`` it
calls ``report_process``; when the answer says ``stop_requested`` (``cks process
stop KIND``), or on SIGTERM/SIGINT or ``stop()``, it drains: claims nothing
more, lets the tasks in hand finish, sends a last report with ``exited`` and
returns from ``run()``.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import logging
import os
import signal
import socket
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Awaitable, Callable, TypeVar, Union

from .client import Client
from .errors import CksError, Conflict, NotFound

log = logging.getLogger("cks")

T = TypeVar("T")

Result = Union[dict[str, Any], str, None]
SyncHandler = Callable[["Task", "TaskContext"], Result]
AsyncHandler = Callable[["Task", "TaskContext"], Awaitable[Result]]
Handler = Union[SyncHandler, AsyncHandler]


class PermanentFailure(Exception):
    """Raise from a handler to fail the task for good; any other exception fails it retryably
    (it goes back to OPEN while the task's max_attempts allow)."""


@dataclass
class Task:
    """A claimed task: the fields a handler reads most, and ``raw``, the claim's whole answer for it."""

    id: int
    type: str
    lease_token: str
    title: str = ""
    description: str = ""
    acceptance_criteria: str = ""
    payload: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)
    attempts: int = 0
    raw: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_claim(cls, raw: dict[str, Any]) -> Task:
        """The Task of one item of claim_tasks' ``tasks``."""
        return cls(
            id=int(raw["task_id"]), type=str(raw["type"]), lease_token=str(raw["lease_token"]),
            title=raw.get("title", ""), description=raw.get("description", ""),
            acceptance_criteria=raw.get("acceptance_criteria", ""), payload=raw.get("payload"),
            metadata=raw.get("metadata") or {}, attempts=raw.get("attempts", 0), raw=raw,
        )


class TaskContext:
    """What a handler has besides its task: the abort signal and calls under the task's lease.

    ``aborted`` is set when the attempt must stop: an operator stopped it (the
    worker confirms the abort once the handler returns) or the lease was lost.
    A sync handler should check it between steps (``ctx.aborted.is_set()``,
    ``ctx.aborted.wait(timeout)``); an async handler is cancelled instead.
    """

    def __init__(self, client: Client, task: Task) -> None:
        self.client = client
        self.task = task
        self.aborted = threading.Event()
        self.handed_off = False

    @property
    def lease_token(self) -> str:
        return self.task.lease_token

    def output(self, text: str, stream: str = "stdout") -> dict[str, Any]:
        """Append a chunk of live output (at most 64 KiB of text) to this attempt: followers see it at once."""
        return self.client.append_output(self.task.id, self.task.lease_token, text, stream)

    def add_evidence(self, kind: str, body: str) -> dict[str, Any]:
        """Record evidence of this attempt (a log, a link, a workspace path…)."""
        return self.client.add_evidence(self.task.id, self.task.lease_token, kind, body)

    def report_usage(
        self,
        *,
        model: str | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cost: str | Decimal | None = None,
    ) -> dict[str, Any]:
        """Record what one call of this attempt spent (cost in USD: a str or Decimal). When the report uses the
        task's budget up, ``budget_exceeded`` is in the answer, ``aborted`` is set, and the worker confirms the
        abort once the handler returns: stop working."""
        answer = self.client.report_usage(self.task.id, self.task.lease_token, model=model,
                                          input_tokens=input_tokens, output_tokens=output_tokens, cost=cost)
        if answer.get("budget_exceeded"):
            self.aborted.set()
        return answer

    def request_input(self, question: str) -> dict[str, Any]:
        """Ask a person a question: the task waits in NEEDS_INPUT and this attempt ends
        (the worker neither completes nor fails it after the handler returns)."""
        answer = self.client.request_input(self.task.id, self.task.lease_token, question)
        self.handed_off = True
        return answer


@dataclass
class _InHand:
    """A task being worked: its context, its job and how its lease ended, if it did."""

    task: Task
    ctx: TaskContext
    since: float
    job: asyncio.Future[Any] | None = None
    ended: str = ""  # "abort" (an operator's stop) or "lost" (the lease ran out)


class Worker:
    """Runs handlers for task types under one process kind.

    client: the hub (``Client()``: CKS_URL and CKS_TOKEN). kind: the process
    kind it reports as (letters, digits, ``_ - . :``), what ``cks process stop
    KIND`` names. concurrency: tasks worked at once. lease_s: each claim's
    lease, renewed every third of it. liveness_interval_s: seconds between
    liveness reports (1 to 3600); a stop request is seen within one.
    claim_wait_s: how long one claim waits for work (0 to 60); a drain waits
    for the claim in flight, so it is also the longest a stop waits for it.
    name: the executor name the claims record (``claimed_by``; default
    ``KIND:INSTANCE_ID``). A Worker runs once: its ``instance_id`` names that run.
    """

    def __init__(
        self,
        client: Client | None = None,
        kind: str = "python-worker",
        concurrency: int = 1,
        lease_s: float = 60.0,
        liveness_interval_s: float = 30.0,
        claim_wait_s: float = 20.0,
        name: str | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.client = client or Client()
        self.kind = kind
        self.concurrency = concurrency
        self.lease_s = lease_s
        self.liveness_interval_s = liveness_interval_s
        self.claim_wait_s = claim_wait_s
        self.instance_id = str(uuid.uuid4())
        self.name = name or f"{kind}:{self.instance_id}"
        self._handlers: dict[str, Handler] = {}
        self._draining = threading.Event()
        self._started = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._in_hand: dict[int, _InHand] = {}
        self._io_pool: ThreadPoolExecutor | None = None
        self._task_pool: ThreadPoolExecutor | None = None

    def task(self, task_type: str) -> Callable[[Handler], Handler]:
        """Register the decorated function as the handler of task_type.

        ``def h(task, ctx)`` runs in a thread of its own; ``async def h(task,
        ctx)`` on the worker's event loop. The return value (a dict, sent as
        JSON, a str, or None) is the task's result."""

        def register(fn: Handler) -> Handler:
            self._handlers[task_type] = fn
            return fn

        return register

    @property
    def draining(self) -> bool:
        """Whether a drain has begun (stop(), a signal or a stop request seen in a liveness answer)."""
        return self._draining.is_set()

    def stop(self) -> None:
        """Ask the worker to drain: claim nothing more, finish the tasks in hand, report exited, return from run().
        Safe from any thread and from signal handlers."""
        self._draining.set()
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            try:
                loop.call_soon_threadsafe(wake.set)
            except RuntimeError:  # the loop has closed: run() is over
                pass

    def run(self) -> None:
        """Work until drained (a stop request, SIGTERM/SIGINT or stop()); blocks.

        Signal handlers are installed only when called from the main thread;
        after the first signal the previous handlers are back, so a second
        SIGINT interrupts as usual."""
        if not self._handlers:
            raise ValueError("no handlers: register one with @worker.task(TYPE)")
        if self._started:
            raise RuntimeError("a Worker runs once; make a new one (a new instance_id)")
        self._started = True
        restore = self._install_signals()
        try:
            asyncio.run(self._main())
        finally:
            restore()

    # -- the loop --------------------------------------------------------------

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        if self._draining.is_set():
            self._wake.set()
        self._io_pool = ThreadPoolExecutor(self.concurrency + 4, thread_name_prefix="cks-io")
        self._task_pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="cks-task")
        log.info("cks worker %s (%s) started: types %s, concurrency %d", self.kind, self.instance_id,
                 sorted(self._handlers), self.concurrency)
        liveness = asyncio.create_task(self._liveness())
        works: set[asyncio.Task[None]] = set()
        try:
            await self._claim_loop(works)
            if works:
                log.info("cks worker %s draining: %d task(s) in hand", self.kind, len(works))
                await asyncio.wait(works)
        finally:
            liveness.cancel()
            await asyncio.wait({liveness})
            await self._report(exited=True)
            self._io_pool.shutdown(wait=False)
            self._task_pool.shutdown(wait=False)
            log.info("cks worker %s (%s) exited", self.kind, self.instance_id)

    async def _claim_loop(self, works: set[asyncio.Task[None]]) -> None:
        """Claim tasks into free slots until draining; each claimed task runs as its own asyncio task."""
        assert self._wake is not None
        failures = 0
        while not self._draining.is_set():
            free = self.concurrency - len(self._in_hand)
            if free <= 0:
                await self._wake.wait()
                self._wake.clear()
                continue
            try:
                answer = await self._io(self.client.claim_tasks, sorted(self._handlers), n=free, lease_s=self.lease_s,
                                        running=True, wait_s=self.claim_wait_s, worker=self.name,
                                        instance_id=self.instance_id)
            except CksError as e:
                failures += 1
                delay = min(30.0, 2.0**failures)
                log.warning("cks worker %s: claim failed (%s); again in %.0fs", self.kind, e, delay)
                await self._pause(delay)
                continue
            failures = 0
            if answer.get("stop_requested") and not self._draining.is_set():
                # The hub ended the claim: this process was asked to stop.
                log.info("cks worker %s: stop requested: draining", self.kind)
                self.stop()
            for raw in answer["tasks"]:
                # In hand from here, before the next round counts free slots.
                task = Task.from_claim(raw)
                held = _InHand(task, TaskContext(self.client, task), time.monotonic())
                self._in_hand[task.id] = held
                work = asyncio.create_task(self._work(held))
                works.add(work)
                work.add_done_callback(works.discard)

    async def _pause(self, seconds: float) -> None:
        """Wait seconds, or less when woken (a stop, a slot freed)."""
        assert self._wake is not None
        try:
            await asyncio.wait_for(self._wake.wait(), seconds)
        except asyncio.TimeoutError:
            pass
        self._wake.clear()

    async def _work(self, held: _InHand) -> None:
        """Run one task's handler under a heartbeat, then end the attempt as it went."""
        assert self._wake is not None and self._loop is not None
        task, ctx = held.task, held.ctx
        log.info("cks worker %s: task %d (%s) claimed", self.kind, task.id, task.type)
        heartbeat = asyncio.create_task(self._heartbeat(held))
        try:
            handler = self._handlers[task.type]
            if inspect.iscoroutinefunction(handler):
                held.job = asyncio.ensure_future(handler(task, ctx))
            else:
                held.job = self._loop.run_in_executor(self._task_pool, handler, task, ctx)
            await asyncio.wait({held.job})
            heartbeat.cancel()
            await asyncio.wait({heartbeat})
            await self._end(held)
        except Exception:  # a bug of ours: the lease runs out and the task is claimed again
            log.exception("cks worker %s: task %d", self.kind, task.id)
        finally:
            heartbeat.cancel()
            del self._in_hand[task.id]
            self._wake.set()

    async def _heartbeat(self, held: _InHand) -> None:
        """Renew the lease every third of it; on an abort or a lost lease tell the handler and stop."""
        task = held.task
        while True:
            await asyncio.sleep(self.lease_s / 3)
            try:
                answer = await self._io(self.client.touch_task, task.id, task.lease_token)
            except (NotFound, Conflict) as e:
                answer = {"held": False, "abort_requested": False}
                log.warning("cks worker %s: task %d: heartbeat refused: %s", self.kind, task.id, e)
            except CksError as e:  # the hub is unreachable: keep trying while the lease lasts
                log.warning("cks worker %s: task %d: heartbeat failed: %s", self.kind, task.id, e)
                continue
            if answer.get("held"):
                continue
            held.ended = "abort" if answer.get("abort_requested") else "lost"
            log.warning("cks worker %s: task %d: %s", self.kind, task.id,
                        "abort requested by an operator" if held.ended == "abort" else "lease lost")
            held.ctx.aborted.set()
            if held.job is not None and isinstance(held.job, asyncio.Task):
                held.job.cancel()
            return

    async def _end(self, held: _InHand) -> None:
        """End the attempt: confirm an abort, or complete or fail it as the handler returned."""
        task, job = held.task, held.job
        assert job is not None
        if held.ended == "abort":
            await self._confirm_abort(task)
            return
        if held.ended == "lost":
            return  # not ours any more: whatever we write would be refused
        if held.ctx.handed_off:
            return
        error: BaseException | None
        error = asyncio.CancelledError("the handler was cancelled") if job.cancelled() else job.exception()
        result = ""
        if error is None:
            try:
                result = _result_text(job.result())
            except (TypeError, ValueError) as e:
                error = PermanentFailure(f"the handler's result is not JSON: {e}")
        try:
            if error is None:
                await self._io(self.client.complete_task, task.id, task.lease_token, result)
                log.info("cks worker %s: task %d completed", self.kind, task.id)
            else:
                reason = f"{type(error).__name__}: {error}"
                await self._io(self.client.fail_task, task.id, task.lease_token, reason,
                               retryable=not isinstance(error, PermanentFailure))
                log.info("cks worker %s: task %d failed: %s", self.kind, task.id, reason)
        except Conflict as e:
            # Fenced: the task was stopped or the lease ran out while the
            # handler ran. Nothing was written; if an operator's stop waits
            # for us, say the work has ended.
            log.warning("cks worker %s: task %d: fenced, result not recorded: %s", self.kind, task.id, e)
            await self._confirm_abort(task)
        except CksError as e:
            log.error("cks worker %s: task %d: could not end the attempt: %s", self.kind, task.id, e)

    async def _confirm_abort(self, task: Task) -> None:
        """Tell an operator's waiting stop that this attempt's work has stopped (nothing to confirm is fine)."""
        try:
            await self._io(self.client.confirm_abort, task.id, task.lease_token)
            log.info("cks worker %s: task %d: abort confirmed", self.kind, task.id)
        except NotFound:
            pass
        except CksError as e:
            log.warning("cks worker %s: task %d: confirm_abort: %s", self.kind, task.id, e)

    # -- liveness ----------------------------------------------------------------

    async def _liveness(self) -> None:
        """Report every liveness interval; a stop_requested answer starts the drain."""
        while True:
            answer = await self._report()
            if answer.get("desired_state") == "stop_requested" and not self._draining.is_set():
                log.info("cks worker %s: stop requested: draining", self.kind)
                self.stop()
            await asyncio.sleep(self.liveness_interval_s)

    async def _report(self, exited: bool = False) -> dict[str, Any]:
        """One report_process call with the oldest task in hand; {} when it failed (logged)."""
        oldest = min(self._in_hand.values(), key=lambda h: h.since, default=None)
        try:
            return await self._io(
                self.client.report_process, self.kind, self.instance_id, hostname=socket.gethostname(),
                pid=os.getpid(), liveness_interval_s=self.liveness_interval_s,
                current_task_id=oldest.task.id if oldest and not exited else None,
                current_task_type=oldest.task.type if oldest and not exited else None,
                task_types=sorted(self._handlers), exited=exited)
        except CksError as e:
            log.warning("cks worker %s: report_process failed: %s", self.kind, e)
            return {}

    # -- plumbing ----------------------------------------------------------------

    async def _io(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a blocking client call on the I/O threads."""
        assert self._loop is not None
        return await self._loop.run_in_executor(self._io_pool, functools.partial(fn, *args, **kwargs))

    def _install_signals(self) -> Callable[[], None]:
        """Make SIGTERM and SIGINT start the drain (main thread only); returns what puts the old handlers back."""
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        sigs = (signal.SIGTERM, signal.SIGINT)
        old = {s: signal.getsignal(s) for s in sigs}

        def restore() -> None:
            for s, h in old.items():
                signal.signal(s, h)

        def on_signal(signum: int, _frame: Any) -> None:
            log.info("cks worker %s: %s: draining", self.kind, signal.Signals(signum).name)
            restore()
            self.stop()

        for s in sigs:
            signal.signal(s, on_signal)
        return restore


def _result_text(value: Any) -> str:
    """A handler's return value as complete_task's result: a str as is, None as "", anything else
    as JSON (TypeError or ValueError when it is not JSON)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value)
