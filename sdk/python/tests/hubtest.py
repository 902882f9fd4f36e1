"""Helpers of the tests that run against a real hub (CKS_URL, CKS_TOKEN: an admin token)."""

from __future__ import annotations

import os
import threading
import time
import unittest
import uuid
from typing import Callable

from cks import Client, Worker

DEADLINE_S = 30.0


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
