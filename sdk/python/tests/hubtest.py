"""Helpers of the tests that run against a real hub (CKS_URL, CKS_TOKEN: an admin token)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import threading
import time
import unittest
import uuid
from pathlib import Path
from typing import Any, Callable, TypeVar, cast

from cks import Client, Worker

DEADLINE_S = 30.0

# Short settings keep the tests quick; the waits are on conditions, with DEADLINE_S to spare.
FAST: dict[str, Any] = {"lease_s": 6.0, "liveness_interval_s": 1.0, "claim_wait_s": 2.0}

# The scenario table every client must pass (sdk/scenarios.json): its ids.
SCENARIOS = frozenset(s["id"] for s in json.loads(
    (Path(__file__).resolve().parents[2] / "scenarios.json").read_text(encoding="utf-8"))["scenarios"])

TestMethod = TypeVar("TestMethod", bound=Callable[..., None])


def scenario(id: str) -> Callable[[TestMethod], TestMethod]:
    """Mark a test as scenario ``id`` of sdk/scenarios.json: once its body has passed it prints
    ``scenario ID ok``, which TestPythonSDK (cmd/cks) holds to the table. An id the table does not
    have is refused here, so the suite fails to load."""
    if id not in SCENARIOS:
        raise ValueError(f"scenario {id!r} is not in sdk/scenarios.json")

    def mark(test: TestMethod) -> TestMethod:
        @functools.wraps(test)
        def run(self: unittest.TestCase, *args: Any, **kwargs: Any) -> None:
            test(self, *args, **kwargs)
            print(f"scenario {id} ok", flush=True)

        return cast(TestMethod, run)

    return mark


def worker_process(kind: str, task_type: str, *args: str) -> subprocess.Popen[str]:
    """tests/worker_process.py (a Worker of kind for task_type in a process of its own) run with args,
    its output piped; the caller ends it."""
    script = Path(__file__).resolve().parent / "worker_process.py"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.Popen([sys.executable, str(script), kind, task_type, *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def hub_client(test: unittest.TestCase) -> Client:
    """A client of the hub under test, or the test skipped when CKS_URL/CKS_TOKEN are unset."""
    if not os.environ.get("CKS_URL") or not os.environ.get("CKS_TOKEN"):
        test.skipTest("CKS_URL and CKS_TOKEN are unset: these tests need a running hub and its admin token")
    return Client(timeout=30)


def unique(prefix: str) -> str:
    """A name no other test uses (task types, process kinds): tests share one hub."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def wait_for(what: str, cond: Callable[[], bool], timeout: float = DEADLINE_S) -> None:
    """Poll cond until it holds; fail (AssertionError) once timeout passes."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.05)


class Running:
    """A Worker running in a thread of its own (no signal handlers there)."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name=f"worker-{worker.kind}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.worker.run()
        except BaseException as e:  # reported by join
            self.error = e

    def join(self, timeout: float = DEADLINE_S) -> None:
        """Wait for run() to return; fail when it does not in time or raised."""
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise AssertionError(f"worker {self.worker.kind} did not return from run() within {timeout:.0f}s")
        if self.error is not None:
            raise AssertionError(f"worker {self.worker.kind} run() raised {self.error!r}")

    def stop(self) -> None:
        """Drain the worker and wait for run() to return (a test's cleanup)."""
        self.worker.stop()
        self.join()
