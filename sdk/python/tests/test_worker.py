"""Worker against a real hub: completion, concurrency, operator stops and updates (abort), a killed worker,
remote process stop. The tests marked @scenario are the scenario table's (sdk/scenarios.json)."""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import threading
import unittest
from typing import Any

from cks import Task, TaskContext, Worker
from hubtest import DEADLINE_S, FAST, Running, hub_client, scenario, unique, wait_for, worker_process

logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s")


class WorkerTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = hub_client(self)
        self.kind = unique("sdk-worker")

    def start(self, worker: Worker) -> Running:
        running = Running(worker)
        self.addCleanup(running.stop)
        return running

    def state(self, task_id: int) -> str:
        return str(self.client.get_task(task_id)["state"])

    @scenario("completes")
    def test_completes_each_task_once_two_at_a_time(self) -> None:
        t = unique("sdk-sum")
        ids = [self.client.create_task(t, payload={"n": i})["task"]["task_id"] for i in range(6)]
        pair = threading.Barrier(2, timeout=DEADLINE_S)  # passes only when two handlers run at once
        calls: list[int] = []
        lock = threading.Lock()
        worker = Worker(self.client, kind=self.kind, concurrency=2, **FAST)

        @worker.task(t)
        def handle(task: Task, ctx: TaskContext) -> dict[str, Any]:
            with lock:
                calls.append(task.id)
            pair.wait()
            return {"double": task.payload["n"] * 2}

        running = self.start(worker)
        wait_for("six tasks COMPLETED", lambda: all(self.state(i) == "COMPLETED" for i in ids))
        self.assertEqual(sorted(calls), sorted(ids))
        for n, i in enumerate(ids):
            self.assertEqual(json.loads(self.client.get_task(i)["result"]), {"double": n * 2})
        worker.stop()
        running.join()
        row = self.client.process_status(self.kind)
        self.assertEqual((row["status"], row["instance_id"]), ("stopped", worker.instance_id))
        self.assertIn("exited_at", row)

    @scenario("slots")
    def test_claims_no_more_than_its_slots(self) -> None:
        t = unique("sdk-slots")
        ids = [self.client.create_task(t)["task"]["task_id"] for _ in range(4)]
        started, release = threading.Semaphore(0), threading.Event()
        worker = Worker(self.client, kind=self.kind, concurrency=2, **FAST)

        @worker.task(t)
        def handle(task: Task, ctx: TaskContext) -> None:
            started.release()
            release.wait(DEADLINE_S)

        self.start(worker)
        for _ in range(2):
            self.assertTrue(started.acquire(timeout=DEADLINE_S), "two handlers did not start")
        # Both slots are taken, so the worker claims nothing until one frees.
        states = sorted(self.state(i) for i in ids)
        self.assertEqual(states, ["OPEN", "OPEN", "RUNNING", "RUNNING"])
        release.set()
        wait_for("four tasks COMPLETED", lambda: all(self.state(i) == "COMPLETED" for i in ids))

    @scenario("listed-alive")
    def test_appears_in_list_processes(self) -> None:
        t = unique("sdk-seen")
        worker = Worker(self.client, kind=self.kind, **FAST)
        worker.task(t)(lambda task, ctx: None)
        self.start(worker)

        def listed() -> bool:
            rows = self.client.list_processes(kind=self.kind, alive=True)["processes"] or []
            return any(r["instance_id"] == worker.instance_id for r in rows)

        wait_for("the worker listed alive under its kind", listed)
        row = self.client.process_status(self.kind)
        self.assertEqual((row["process_kind"], row["status"], row["task_types"]), (self.kind, "alive", [t]))

    @scenario("process-stop-drains")
    def test_request_process_stop_drains_and_ends_run(self) -> None:
        """A stop of the worker's kind lets the task in hand finish, then run() returns and the row reads stopped."""
        t = unique("sdk-drain")
        started, release = threading.Event(), threading.Event()
        worker = Worker(self.client, kind=self.kind, **FAST)

        @worker.task(t)
        def handle(task: Task, ctx: TaskContext) -> str:
            started.set()
            release.wait(DEADLINE_S)
            return "drained"

        running = self.start(worker)
        task_id = self.client.create_task(t)["task"]["task_id"]
        wait_for("the handler to start", started.is_set)
        wait_for("the worker to report its task", lambda: self.client.process_status(self.kind).get("current_task_id") == task_id)
        stop = self.client.request_process_stop(self.kind)
        self.assertEqual((stop["found"], stop["instance_id"]), (True, worker.instance_id))
        wait_for("the worker to see the stop", lambda: worker.draining)
        release.set()
        running.join()
        got = self.client.get_task(task_id)
        self.assertEqual((got["state"], got["result"]), ("COMPLETED", "drained"))
        row = self.client.process_status(self.kind)
        self.assertEqual((row["instance_id"], row["status"], row["desired_state"]),
                         (worker.instance_id, "stopped", "stop_requested"))
        self.assertIn("exited_at", row)

    @scenario("stop-ends-waiting-claim")
    def test_stop_ends_a_waiting_claim(self) -> None:
        """A worker long-polling for work hears of its stop from the claim itself (stop_requested): with its next
        liveness report an hour away, run() returns once the process is asked to stop. (The hub ends the waiting
        claim at once, TestClaimForAProcessAskedToStop; were it not to, the next claim would say so, a wait later.)"""
        worker = Worker(self.client, kind=self.kind, lease_s=6.0, liveness_interval_s=3600, claim_wait_s=60)
        worker.task(unique("sdk-idle"))(lambda task, ctx: None)
        running = self.start(worker)
        wait_for("the worker's first report", lambda: self.client.list_processes(kind=self.kind)["processes"])
        self.client.request_process_stop(self.kind)
        running.join(DEADLINE_S + 60)
        self.assertTrue(worker.draining)

    @scenario("sigterm-drains")
    def test_sigterm_drains_a_worker_process(self) -> None:
        """A worker run in a process's main thread drains on SIGTERM: run() returns, the process exits 0, the row reads exited."""
        proc = worker_process(self.kind, unique("sdk-sig"))
        self.addCleanup(proc.communicate)
        self.addCleanup(proc.kill)
        wait_for("the worker process alive", lambda: self.client.process_status(self.kind).get("status") == "alive")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=DEADLINE_S)
        self.assertEqual((proc.returncode, out), (0, "run returned\n"), err)
        row = self.client.process_status(self.kind)
        self.assertEqual((row["pid"], row["status"]), (proc.pid, "stopped"))
        self.assertIn("exited_at", row)

    @scenario("stop-task-aborts")
    def test_stop_task_aborts_a_sync_handler(self) -> None:
        t = unique("sdk-abort-sync")
        started = threading.Event()
        seen: list[bool] = []
        worker = Worker(self.client, kind=self.kind, **FAST)

        @worker.task(t)
        def handle(task: Task, ctx: TaskContext) -> str:
            started.set()
            seen.append(ctx.aborted.wait(DEADLINE_S))
            return "should not be recorded"

        self.start(worker)
        task_id = self.client.create_task(t)["task"]["task_id"]
        wait_for("the handler to start", started.is_set)
        self.assert_stop_confirmed(task_id)
        self.assertEqual(seen, [True])

    @scenario("stop-task-aborts")
    def test_stop_task_cancels_an_async_handler(self) -> None:
        t = unique("sdk-abort-async")
        started = threading.Event()
        cancelled: list[bool] = []
        worker = Worker(self.client, kind=self.kind, **FAST)

        @worker.task(t)
        async def handle(task: Task, ctx: TaskContext) -> str:
            started.set()
            try:
                await asyncio.sleep(DEADLINE_S * 2)
            except asyncio.CancelledError:
                cancelled.append(True)
                raise
            return "should not be recorded"

        self.start(worker)
        task_id = self.client.create_task(t)["task"]["task_id"]
        wait_for("the handler to start", started.is_set)
        self.assert_stop_confirmed(task_id)
        self.assertEqual(cancelled, [True])

    def assert_stop_confirmed(self, task_id: int) -> None:
        """stop_task waits for the worker's confirmation: abort_confirmed, in its answer and on the task."""
        stop = self.client.stop_task(task_id, "operator stop", deadline=f"{int(DEADLINE_S)}s")
        self.assertEqual((stop["from"], stop["task"]["state"]), ("RUNNING", "STOPPED"))
        self.assertEqual(stop["abort"]["outcome"], "abort_confirmed")
        got = self.client.get_task(task_id)
        self.assertEqual((got["state"], got["last_abort"]["outcome"]), ("STOPPED", "abort_confirmed"))
        self.assertNotEqual(got.get("result"), "should not be recorded")

    @scenario("handler-error-fails")
    def test_handler_exception_fails_the_attempt(self) -> None:
        from cks import PermanentFailure

        t = unique("sdk-fail")
        worker = Worker(self.client, kind=self.kind, **FAST)

        @worker.task(t)
        def handle(task: Task, ctx: TaskContext) -> None:
            raise PermanentFailure("bad input")

        self.start(worker)
        task_id = self.client.create_task(t)["task"]["task_id"]
        wait_for("the task FAILED", lambda: self.state(task_id) == "FAILED")
        self.assertEqual(self.client.get_task(task_id)["last_error"], "PermanentFailure: bad input")

    @scenario("update-restarts")
    def test_material_update_restarts_the_attempt(self) -> None:
        """update_task with a new payload stops the running attempt (its handler sees the abort), applies the edit and
        starts the task again: the update answers abort_confirmed and the next attempt works the new payload."""
        t = unique("sdk-update")
        started = threading.Event()
        runs: list[Any] = []
        worker = Worker(self.client, kind=self.kind, **FAST)

        @worker.task(t)
        def handle(task: Task, ctx: TaskContext) -> str:
            runs.append(task.payload)
            if task.payload["v"] == 1:
                started.set()
                ctx.aborted.wait(DEADLINE_S)
                return "v1 should not be recorded"
            return f"done v{task.payload['v']}"

        self.start(worker)
        task_id = self.client.create_task(t, payload={"v": 1})["task"]["task_id"]
        wait_for("the handler to start", started.is_set)
        up = self.client.update_task(task_id, payload={"v": 2}, deadline=f"{int(DEADLINE_S)}s")
        self.assertEqual((up["path"], up["abort"]["outcome"]), ("stop_apply_start", "abort_confirmed"))
        wait_for("the task COMPLETED", lambda: self.state(task_id) == "COMPLETED")
        got = self.client.get_task(task_id)
        self.assertEqual((got["result"], got["restarts"], got["revision"]), ("done v2", 1, 2))
        self.assertEqual(runs, [{"v": 1}, {"v": 2}])

    @scenario("kill-reclaimed")
    def test_killed_worker_task_is_reclaimed_and_done_once(self) -> None:
        """kill -9 of a worker process holding a task: once its lease (2 s) runs out the hub's lease reaper takes the
        task back (the hubs of TestPythonSDK reap every second) and another worker completes it, once."""
        t, kind = unique("sdk-kill"), unique("sdk-worker")
        proc = worker_process(kind, t, "--lease-s", "2", "--hold")
        self.addCleanup(proc.communicate)
        self.addCleanup(proc.kill)
        task_id = self.client.create_task(t)["task"]["task_id"]

        def held() -> bool:
            got = self.client.get_task(task_id)
            return got["state"] == "RUNNING" and str(got.get("claimed_by", "")).startswith(kind + ":")

        wait_for("the worker process to hold the task", held)
        proc.kill()
        self.assertEqual(proc.wait(DEADLINE_S), -signal.SIGKILL)
        calls: list[int] = []
        worker = Worker(self.client, kind=self.kind, **FAST)

        @worker.task(t)
        def handle(task: Task, ctx: TaskContext) -> str:
            calls.append(task.id)
            return "done by the second"

        self.start(worker)
        wait_for("the task COMPLETED", lambda: self.state(task_id) == "COMPLETED")
        got = self.client.get_task(task_id)
        done = [e for e in got["events"] if e["to"] == "COMPLETED"]
        reclaimed = [e for e in got["events"] if (e["actor"], e.get("reason"), e["from"], e["to"]) ==
                     ("reaper", "lease expired", "RUNNING", "OPEN")]
        self.assertEqual((got["result"], calls, [e["actor"] for e in done]), ("done by the second", [task_id], [worker.name]))
        self.assertTrue(reclaimed, got["events"])

    def test_request_input_hands_the_task_to_a_person(self) -> None:
        """A handler that asks a question leaves the task in NEEDS_INPUT, with its evidence; the worker writes nothing after."""
        t = unique("sdk-ask")
        worker = Worker(self.client, kind=self.kind, **FAST)

        @worker.task(t)
        async def handle(task: Task, ctx: TaskContext) -> str:
            await asyncio.to_thread(ctx.add_evidence, "log", "looked at it")
            await asyncio.to_thread(ctx.request_input, "which file?")
            return "not a result"

        self.start(worker)
        task_id = self.client.create_task(t)["task"]["task_id"]
        wait_for("the task NEEDS_INPUT", lambda: self.state(task_id) == "NEEDS_INPUT")
        got = self.client.get_task(task_id)
        self.assertEqual(got["question"], "which file?")
        self.assertNotEqual(got.get("result"), "not a result")


class ScenarioTableTest(unittest.TestCase):
    def test_an_id_not_in_the_table_is_refused(self) -> None:
        with self.assertRaises(ValueError):
            scenario("no-such-scenario")


if __name__ == "__main__":
    unittest.main()
