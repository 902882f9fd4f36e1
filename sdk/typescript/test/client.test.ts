// Client against a real hub: typed errors, query encoding, the generic call, fencing (a scenario of sdk/scenarios.json).

import assert from "node:assert/strict";
import { Client, Conflict, InvalidArgument, NotFound, Unauthorized } from "../src/index.js";
import { hubClient, hubTest, scenarioTest, unique, waitFor } from "./hub.js";

const client = hubClient();

hubTest("create and get", async () => {
  const t = unique("ts-get");
  const created = await client.createTask(t, { title: "hello", payload: { k: [1, 2] }, priority: 7 });
  assert.equal(created.created, true);
  const got = await client.getTask(created.task.task_id);
  assert.deepEqual([got.type, got.title, got.payload, got.priority, got.state], [t, "hello", { k: [1, 2] }, 7, "OPEN"]);
  const viaCall = await client.call("get_task", { task_id: created.task.task_id });
  assert.equal(viaCall.task_id, created.task.task_id);
});

hubTest("an invalid type names the field", async () => {
  await assert.rejects(client.createTask("a b"), (err: unknown) => {
    assert.ok(err instanceof InvalidArgument);
    assert.deepEqual([err.status, err.code, err.field], [400, "invalid_argument", "type"]);
    return true;
  });
});

hubTest("a priority out of range names the field", async () => {
  await assert.rejects(client.createTask(unique("ts-prio"), { priority: 5000 }), (err: unknown) => {
    assert.ok(err instanceof InvalidArgument);
    assert.equal(err.field, "priority");
    return true;
  });
});

hubTest("usage and a budget", async () => {
  const t = unique("ts-budget");
  const created = await client.createTask(t, { max_tokens: 100, max_cost: "0.50" });
  assert.deepEqual([created.task.spend?.max_tokens, created.task.spend?.max_cost], [100, "0.5"]);
  const claimed = (await client.call("claim_tasks", { types: [t] })).tasks?.[0];
  assert.ok(claimed);
  const first = await client.reportUsage(claimed.task_id, claimed.lease_token, { model: "gpt-5", input_tokens: 50, output_tokens: 10, cost: "0.0125" });
  assert.deepEqual([first.spend.tokens, first.usage.cost, first.budget_exceeded], [60, "0.0125", undefined]);
  await assert.rejects(client.reportUsage(claimed.task_id, claimed.lease_token, { cost: "1e3" }), (err: unknown) => {
    assert.ok(err instanceof InvalidArgument);
    assert.equal(err.field, "cost");
    return true;
  });
  const over = await client.reportUsage(claimed.task_id, claimed.lease_token, { model: "gpt-5", input_tokens: 40 });
  assert.match(over.budget_exceeded ?? "", /spent 100 tokens of the 100 allowed/);
  assert.equal((await client.getTask(claimed.task_id)).state, "NEEDS_INPUT");
  const sums = await client.getUsage({ by: ["model"], type: t });
  assert.deepEqual([sums.total.tokens, sums.rows?.[0]?.group], [100, { model: "gpt-5" }]);
});

hubTest("live output", async () => {
  const t = unique("ts-output");
  const created = await client.createTask(t);
  const claimed = (await client.claimTasks({ types: [t], running: true, worker: "ts-output" })).tasks[0];
  assert.ok(claimed);
  const id = created.task.task_id;
  const first = await client.appendOutput(id, claimed.lease_token, "hello\n", "stdout");
  assert.equal(first.seq, 1);
  await client.appendOutput(id, claimed.lease_token, "oops\n", "stderr");
  const page = await client.getOutput(id, 1);
  assert.deepEqual((page.chunks ?? []).map((c) => [c.stream, c.text]), [["stderr", "oops\n"]]);
  assert.equal(page.live, true);
  await assert.rejects(client.appendOutput(id, claimed.lease_token, "x".repeat(64 * 1024 + 1)), (err: unknown) => {
    assert.ok(err instanceof InvalidArgument);
    assert.equal(err.field, "text");
    return true;
  });
});

hubTest("not found", async () => {
  await assert.rejects(client.getTask(10 ** 12), (err: unknown) => {
    assert.ok(err instanceof NotFound);
    assert.equal(err.status, 404);
    return true;
  });
});

hubTest("an unknown token", async () => {
  const stranger = new Client({ url: client.url, token: "cks_" + "A".repeat(43) });
  await assert.rejects(stranger.getTask(1), (err: unknown) => {
    assert.ok(err instanceof Unauthorized);
    assert.equal(err.status, 401);
    return true;
  });
});

hubTest("list_tasks repeats list filters", async () => {
  const t = unique("ts-list");
  const a = (await client.createTask(t)).task.task_id;
  const b = (await client.createTask(t)).task.task_id;
  await client.cancelTask(b, "not needed");
  const both = await client.listTasks({ type: [t], state: ["OPEN", "CANCELLED"] });
  assert.deepEqual((both.tasks ?? []).map((x) => x.task_id).sort((x, y) => x - y), [a, b]);
  const openOnly = await client.listTasks({ type: t, state: "OPEN" });
  assert.deepEqual((openOnly.tasks ?? []).map((x) => x.task_id), [a]);
});

scenarioTest("zombie-refused", "a zombie's completion is refused", async () => {
  // A completion under a lease that ran out unrenewed, and that another claim took back, rejects with Conflict
  // (lease_lost) and changes nothing.
  const t = unique("ts-zombie");
  const taskId = (await client.createTask(t)).task.task_id;
  const claimed = await client.claimTasks({ types: [t], lease_s: 1, running: true, worker: "zombie" });
  assert.deepEqual(claimed.tasks.map((x) => x.task_id), [taskId]);
  const token = claimed.tasks[0]!.lease_token;
  // The lease of a second runs out unrenewed; the next claim (or the reaper first) takes the task back.
  let holder: string | undefined;
  await waitFor("another claim to take the task back", async () => {
    holder = (await client.claimTasks({ types: [t], lease_s: 60, running: true, worker: "holder" })).tasks[0]?.lease_token;
    return holder !== undefined;
  });
  assert.deepEqual(await client.touchTask(taskId, token), { held: false, abort_requested: false });
  await assert.rejects(client.completeTask(taskId, token, "late result"), (err: unknown) => {
    assert.ok(err instanceof Conflict);
    assert.deepEqual([err.status, err.code], [409, "lease_lost"]);
    return true;
  });
  const got = await client.getTask(taskId);
  assert.deepEqual([got.state, got.claimed_by], ["RUNNING", "holder"]);
  assert.notEqual(got.result, "late result");
  await client.completeTask(taskId, holder!, "done");
  assert.equal((await client.getTask(taskId)).result, "done");
});
