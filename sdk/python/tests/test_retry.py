"""Client retries and request encoding against a local stand-in server (no hub needed)."""

from __future__ import annotations

import json
import socket
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cks import Client, Conflict, RateLimited, Unavailable
from cks._operations import OPERATIONS


class Script(BaseHTTPRequestHandler):
    """Answers from server.answers in turn (status, headers, body) and records each request."""

    def do_any(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        server: Any = self.server
        server.requests.append((self.command, self.path, body))
        status, headers, answer = server.answers.pop(0) if server.answers else (200, {}, {})
        data = json.dumps(answer).encode()
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_DELETE = do_any

    def log_message(self, *args: Any) -> None:
        pass


class RetryTest(unittest.TestCase):
    def setUp(self) -> None:
        self.server: Any = ThreadingHTTPServer(("127.0.0.1", 0), Script)
        self.server.answers, self.server.requests = [], []
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)
        self.client = Client(f"http://127.0.0.1:{self.server.server_port}", "tok", retries=3, backoff_s=0.001)

    def test_503_is_retried_honouring_retry_after(self) -> None:
        unavailable = {"error": {"code": "storage_unavailable", "message": "later"}}
        self.server.answers = [(503, {"Retry-After": "0"}, unavailable), (429, {}, {"error": {"code": "throttled", "message": "slow"}}),
                               (200, {}, {"task_id": 3})]
        self.assertEqual(self.client.get_task(3), {"task_id": 3})
        self.assertEqual(len(self.server.requests), 3)

    def test_retries_are_bounded(self) -> None:
        self.server.answers = [(429, {}, {"error": {"code": "throttled", "message": "slow"}})] * 10
        with self.assertRaises(RateLimited) as cm:
            self.client.touch_task(3, "lease")
        self.assertEqual((cm.exception.status, cm.exception.code), (429, "throttled"))
        self.assertEqual(len(self.server.requests), 4)  # the first try and 3 retries

    def test_conflict_is_not_retried(self) -> None:
        self.server.answers = [(409, {}, {"error": {"code": "lease_lost", "message": "fenced"}})]
        with self.assertRaises(Conflict):
            self.client.complete_task(3, "lease", "r")
        self.assertEqual(len(self.server.requests), 1)

    def test_encoding(self) -> None:
        self.client.list_tasks(state=["OPEN", "COMPLETED"], type="a", limit=5)
        self.client.list_processes(alive=True)
        self.client.claim_tasks(["x"], n=2, running=True, wait_s=1)
        self.client.call("revoke_token", {"id": "a/b"})
        (m1, p1, b1), (m2, p2, _), (m3, p3, b3), (m4, p4, _) = self.server.requests
        self.assertEqual((m1, p1, b1), ("GET", "/v1/tasks?limit=5&state=OPEN&state=COMPLETED&type=a", b""))
        self.assertEqual((m2, p2), ("GET", "/v1/processes?alive=true"))
        self.assertEqual((m3, p3), ("POST", "/v1/tasks/claim"))
        self.assertEqual(json.loads(b3), {"types": ["x"], "n": 2, "running": True, "wait_s": 1})
        self.assertEqual((m4, p4), ("DELETE", "/v1/tokens/a%2Fb"))

    def test_refused_connection_is_retried_then_raised(self) -> None:
        with socket.socket() as s:  # a port nothing listens on once closed
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        client = Client(f"http://127.0.0.1:{port}", "tok", retries=2, backoff_s=0.001)
        with self.assertRaises(Unavailable) as cm:
            client.complete_task(1, "lease", "r")
        self.assertEqual((cm.exception.status, cm.exception.code), (0, "unreachable"))


class TableTest(unittest.TestCase):
    def test_worker_operations_are_in_the_table(self) -> None:
        for name in ("create_task", "get_task", "list_tasks", "claim_tasks", "mark_running", "touch_task",
                     "complete_task", "fail_task", "request_input", "confirm_abort", "add_evidence",
                     "report_process", "process_status", "list_processes", "request_process_stop",
                     "stop_task", "update_task", "cancel_task"):
            self.assertIn(name, OPERATIONS)



if __name__ == "__main__":
    unittest.main()
