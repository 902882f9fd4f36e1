"""Client against a real hub: typed errors, query encoding, the generic call, fencing (a scenario of sdk/scenarios.json)."""

from __future__ import annotations

import unittest
from typing import Any

from cks import Conflict, InvalidArgument, NotFound, Unauthorized
from hubtest import hub_client, scenario, unique, wait_for


class ClientTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = hub_client(self)

    def test_create_and_get(self) -> None:
        t = unique("sdk-get")
        created = self.client.create_task(t, title="hello", payload={"k": [1, 2]}, priority=7)
        self.assertTrue(created["created"])
        task = created["task"]
        got = self.client.get_task(task["task_id"])
        self.assertEqual((got["type"], got["title"], got["payload"], got["priority"], got["state"]),
                         (t, "hello", {"k": [1, 2]}, 7, "OPEN"))
        self.assertEqual(self.client.call("get_task", {"task_id": task["task_id"]})["task_id"], task["task_id"])

    def test_invalid_type_names_the_field(self) -> None:
        with self.assertRaises(InvalidArgument) as cm:
            self.client.create_task("a b")
        self.assertEqual((cm.exception.status, cm.exception.code, cm.exception.field), (400, "invalid_argument", "type"))

    def test_priority_out_of_range_names_the_field(self) -> None:
        with self.assertRaises(InvalidArgument) as cm:
            self.client.create_task(unique("sdk-prio"), priority=5000)
        self.assertEqual(cm.exception.field, "priority")

    def test_delayed_task(self) -> None:
        t = unique("sdk-delay")
        task = self.client.create_task(t, delay="1h")["task"]
        self.assertEqual(task["state"], "OPEN")
        self.assertIn("run_after", task)
        claimed = self.client.call("claim_tasks", {"types": [t]})
        self.assertEqual(claimed["tasks"], [])
        with self.assertRaises(InvalidArgument) as cm:
            self.client.create_task(t, run_after="tomorrow")
        self.assertEqual(cm.exception.field, "run_after")

    def test_attempt_timeout(self) -> None:
        t = unique("sdk-timeout")
        task = self.client.create_task(t, attempt_timeout="10m")["task"]
        self.assertEqual(task["attempt_timeout"], "10m")
        updated = self.client.update_task(task["task_id"], attempt_timeout="1h30m")
        self.assertEqual(updated["task"]["attempt_timeout"], "1h30m")
        with self.assertRaises(InvalidArgument) as cm:
            self.client.create_task(t, attempt_timeout="0s")
        self.assertEqual(cm.exception.field, "attempt_timeout")

    def test_concurrency_limit(self) -> None:
        t, key = unique("sdk-keyed"), unique("sdk-key")
        limit = self.client.call("set_limit", {"name": key, "pattern": key, "max_running": 1})
        self.assertEqual(limit["max_running"], 1)
        try:
            first = self.client.create_task(t, concurrency_keys=[key])["task"]
            self.client.create_task(t, concurrency_keys=[key])
            self.assertEqual(first["concurrency_keys"], [key])
            claimed = self.client.call("claim_tasks", {"types": [t], "n": 5})
            self.assertEqual([x["task_id"] for x in claimed["tasks"]], [first["task_id"]])
            with self.assertRaises(InvalidArgument) as cm:
                self.client.create_task(t, concurrency_keys=["a b"])
            self.assertEqual(cm.exception.field, "concurrency_keys")
        finally:
            self.assertTrue(self.client.call("delete_limit", {"name": key})["deleted"])

    def test_usage_and_budget(self) -> None:
        from decimal import Decimal

        t = unique("sdk-budget")
        task = self.client.create_task(t, max_tokens=100, max_cost=Decimal("0.50"))["task"]
        self.assertEqual(task["spend"]["max_tokens"], 100)
        self.assertEqual(task["spend"]["max_cost"], "0.5")
        claimed = self.client.call("claim_tasks", {"types": [t]})["tasks"][0]
        first = self.client.report_usage(claimed["task_id"], claimed["lease_token"], model="gpt-5",
                                         input_tokens=50, output_tokens=10, cost="0.0125")
        self.assertEqual(first["spend"]["tokens"], 60)
        self.assertEqual(first["usage"]["cost"], "0.0125")
        self.assertNotIn("budget_exceeded", first)
        with self.assertRaises(TypeError):
            self.client.report_usage(claimed["task_id"], claimed["lease_token"], cost=0.1)  # type: ignore[arg-type]
        with self.assertRaises(InvalidArgument) as cm:
            self.client.report_usage(claimed["task_id"], claimed["lease_token"], cost="1e3")
        self.assertEqual(cm.exception.field, "cost")
        over = self.client.report_usage(claimed["task_id"], claimed["lease_token"], model="gpt-5", input_tokens=40)
        self.assertIn("spent 100 tokens of the 100 allowed", over["budget_exceeded"])
        got = self.client.get_task(claimed["task_id"])
        self.assertEqual(got["state"], "NEEDS_INPUT")
        self.assertEqual(got["spend"]["reports"], 2)
        sums = self.client.get_usage(by=["model"], type=t)
        self.assertEqual(sums["total"]["tokens"], 100)
        self.assertEqual(sums["rows"][0]["group"], {"model": "gpt-5"})

    def test_live_output(self) -> None:
        t = unique("sdk-output")
        task = self.client.create_task(t)["task"]
        claimed = self.client.call("claim_tasks", {"types": [t], "n": 1})["tasks"][0]
        first = self.client.append_output(task["task_id"], claimed["lease_token"], "hello\n", "stdout")
        self.assertEqual(first["seq"], 1)
        self.client.append_output(task["task_id"], claimed["lease_token"], "oops\n", "stderr")
        page = self.client.get_output(task["task_id"], after=1)
        self.assertEqual([(c["stream"], c["text"]) for c in page["chunks"]], [("stderr", "oops\n")])
        self.assertTrue(page["live"])
        with self.assertRaises(InvalidArgument) as cm:
            self.client.append_output(task["task_id"], claimed["lease_token"], "x" * (64 * 1024 + 1))
        self.assertEqual(cm.exception.field, "text")

    def test_expires_at(self) -> None:
        t = unique("sdk-expires")
        import datetime

        soon = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
        task = self.client.create_task(t, expires_at=soon.strftime("%Y-%m-%dT%H:%M:%SZ"))
        self.assertEqual(task["task"]["state"], "OPEN")
        with self.assertRaises(InvalidArgument) as cm:
            self.client.create_task(t, expires_at="2001-01-01T00:00:00Z")
        self.assertEqual(cm.exception.field, "expires_at")

    def test_not_found(self) -> None:
        with self.assertRaises(NotFound) as cm:
            self.client.get_task(10**12)
        self.assertEqual(cm.exception.status, 404)

    def test_unknown_token(self) -> None:
        from cks import Client

        with self.assertRaises(Unauthorized) as cm:
            Client(self.client.url, "cks_" + "A" * 43).get_task(1)
        self.assertEqual(cm.exception.status, 401)

    def test_list_tasks_repeats_list_filters(self) -> None:
        t = unique("sdk-list")
        a = self.client.create_task(t)["task"]["task_id"]
        b = self.client.create_task(t)["task"]["task_id"]
        self.client.cancel_task(b, "not needed")
        both = self.client.list_tasks(type=[t], state=["OPEN", "CANCELLED"])
        self.assertEqual(sorted(x["task_id"] for x in both["tasks"]), [a, b])
        open_only = self.client.list_tasks(type=t, state="OPEN")
        self.assertEqual([x["task_id"] for x in open_only["tasks"]], [a])

    @scenario("zombie-refused")
    def test_zombie_completion_is_refused(self) -> None:
        """A completion under a lease that ran out unrenewed, and that another claim took back, raises Conflict
        (lease_lost) and changes nothing."""
        t = unique("sdk-zombie")
        task_id = self.client.create_task(t)["task"]["task_id"]
        claimed = self.client.claim_tasks([t], lease_s=1, running=True, worker="zombie")
        self.assertEqual([x["task_id"] for x in claimed["tasks"]], [task_id])
        token = claimed["tasks"][0]["lease_token"]
        holder: list[dict[str, Any]] = []

        def taken_back() -> bool:
            holder[:] = self.client.claim_tasks([t], lease_s=60, running=True, worker="holder")["tasks"]
            return bool(holder)

        # The lease of a second runs out unrenewed; the next claim (or the reaper first) takes the task back.
        wait_for("another claim to take the task back", taken_back)
        self.assertEqual(self.client.touch_task(task_id, token), {"held": False, "abort_requested": False})
        with self.assertRaises(Conflict) as cm:
            self.client.complete_task(task_id, token, "late result")
        self.assertEqual((cm.exception.status, cm.exception.code), (409, "lease_lost"))
        got = self.client.get_task(task_id)
        self.assertEqual((got["state"], got["claimed_by"]), ("RUNNING", "holder"))
        self.assertNotEqual(got.get("result"), "late result")
        self.client.complete_task(task_id, holder[0]["lease_token"], "done")
        self.assertEqual(self.client.get_task(task_id)["result"], "done")

if __name__ == "__main__":
    unittest.main()
