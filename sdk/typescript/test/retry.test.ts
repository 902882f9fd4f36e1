// Client retries and request encoding against a local stand-in server (no hub needed).

import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, beforeEach, test } from "node:test";
import { Client, Conflict, OPERATIONS, RateLimited, Unavailable } from "../src/index.js";
import { scenarioTest } from "./hub.js";

/** One scripted answer: status, headers, JSON body; or "drop", the connection closed with no answer. */
type Answer = { status: number; headers?: Record<string, string>; body?: unknown } | "drop";

let server: Server;
let answers: Answer[] = [];
let requests: { method: string; path: string; body: string }[] = [];
let client: Client;
const quiet = { warn: () => {} };

before(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      requests.push({ method: req.method ?? "", path: req.url ?? "", body });
      const answer = answers.shift() ?? { status: 200, body: {} };
      if (answer === "drop") {
        req.socket.destroy();
        return;
      }
      const data = JSON.stringify(answer.body ?? {});
      res.writeHead(answer.status, { ...answer.headers, "Content-Type": "application/json" });
      res.end(data);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
});

after(() => new Promise<void>((resolve) => server.close(() => resolve())));

beforeEach(() => {
  answers = [];
  requests = [];
  const { port } = server.address() as AddressInfo;
  client = new Client({ url: `http://127.0.0.1:${port}`, token: "tok", retries: 3, backoffMs: 1, logger: quiet });
});

test("503 and 429 are retried, honouring Retry-After", async () => {
  answers = [
    { status: 503, headers: { "Retry-After": "0" }, body: { error: { code: "storage_unavailable", message: "later" } } },
    { status: 429, body: { error: { code: "throttled", message: "slow" } } },
    { status: 200, body: { task_id: 3 } },
  ];
  assert.deepEqual(await client.getTask(3), { task_id: 3 });
  assert.equal(requests.length, 3);
});

test("retries are bounded", async () => {
  answers = Array.from({ length: 10 }, () => ({ status: 429, body: { error: { code: "throttled", message: "slow" } } }));
  await assert.rejects(client.touchTask(3, "lease"), (err: unknown) => {
    assert.ok(err instanceof RateLimited);
    assert.deepEqual([err.status, err.code], [429, "throttled"]);
    return true;
  });
  assert.equal(requests.length, 4); // the first try and 3 retries
});

test("a conflict is not retried", async () => {
  answers = [{ status: 409, body: { error: { code: "lease_lost", message: "fenced" } } }];
  await assert.rejects(client.completeTask(3, "lease", "r"), Conflict);
  assert.equal(requests.length, 1);
});

test("a connection lost after sending is retried for GET only", async () => {
  answers = ["drop", { status: 200, body: { task_id: 3 } }];
  assert.deepEqual(await client.getTask(3), { task_id: 3 });
  assert.equal(requests.length, 2);
  requests = [];
  answers = ["drop"];
  await assert.rejects(client.completeTask(3, "lease", "r"), (err: unknown) => {
    assert.ok(err instanceof Unavailable);
    assert.deepEqual([err.status, err.code], [0, "unreachable"]);
    return true;
  });
  assert.equal(requests.length, 1); // a write may have happened: not sent again
});

test("encoding", async () => {
  await client.listTasks({ state: ["OPEN", "COMPLETED"], type: "a", limit: 5 });
  await client.listProcesses({ alive: true });
  await client.claimTasks({ types: ["x"], n: 2, running: true, wait_s: 1 });
  await client.call("revoke_token", { id: "a/b" });
  const [r1, r2, r3, r4] = requests;
  assert.deepEqual([r1!.method, r1!.path, r1!.body], ["GET", "/v1/tasks?limit=5&state=OPEN&state=COMPLETED&type=a", ""]);
  assert.deepEqual([r2!.method, r2!.path], ["GET", "/v1/processes?alive=true"]);
  assert.deepEqual([r3!.method, r3!.path], ["POST", "/v1/tasks/claim"]);
  assert.deepEqual(JSON.parse(r3!.body), { types: ["x"], n: 2, running: true, wait_s: 1 });
  assert.deepEqual([r4!.method, r4!.path], ["DELETE", "/v1/tokens/a%2Fb"]);
});

test("a refused connection is retried, then thrown", async () => {
  // A port nothing listens on once closed.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const refused = new Client({ url: `http://127.0.0.1:${port}`, token: "tok", retries: 2, backoffMs: 1, logger: quiet });
  await assert.rejects(refused.completeTask(1, "lease", "r"), (err: unknown) => {
    assert.ok(err instanceof Unavailable);
    assert.deepEqual([err.status, err.code], [0, "unreachable"]);
    return true;
  });
});

test("the worker's operations are in the table", () => {
  for (const name of [
    "create_task", "get_task", "list_tasks", "claim_tasks", "mark_running", "touch_task", "complete_task", "fail_task",
    "request_input", "confirm_abort", "add_evidence", "report_process", "process_status", "list_processes",
    "request_process_stop", "stop_task", "update_task", "cancel_task",
  ]) {
    assert.ok(name in OPERATIONS, name);
  }
});

test("a scenario not in the table is refused", () => {
  assert.throws(() => scenarioTest("no-such-scenario", "refused", async () => {}), /not in sdk\/scenarios\.json/);
});
