// Worker against a real hub: completion, concurrency, operator stops and updates (abort), a killed worker,
// remote process stop. The scenarioTest ones are the scenario table's (sdk/scenarios.json).

import assert from "node:assert/strict";
import { PermanentFailure, type Task, type TaskContext } from "../src/index.js";
import { DEADLINE_MS, hubClient, hubTest, latch, newWorker, scenarioTest, start, unique, waitFor, within, workerProcess } from "./hub.js";

const client = hubClient();

async function state(taskId: number): Promise<string> {
  return (await client.getTask(taskId)).state;
}

async function allIn(ids: number[], want: string): Promise<boolean> {
  return (await Promise.all(ids.map(state))).every((s) => s === want);
}

scenarioTest("completes", "completes each task once, two at a time", async (t) => {
  const type = unique("ts-sum");
  const ids: number[] = [];
  for (let i = 0; i < 6; i++) ids.push((await client.createTask(type, { payload: { n: i } })).task.task_id);
  // Two handlers pass the pair only when both run at once.
  let waiting: (() => void)[] = [];
  const pair = (): Promise<void> =>
    new Promise((resolve) => {
      waiting.push(resolve);
      if (waiting.length === 2) {
        for (const w of waiting) w();
        waiting = [];
      }
    });
  const calls: number[] = [];
  const worker = newWorker(client, { concurrency: 2 });
  worker.task(type, async (task: Task) => {
    calls.push(task.id);
    await within("a second handler at once", pair());
    return { double: (task.payload as { n: number }).n * 2 };
  });
  const running = start(t, worker);
  await waitFor("six tasks COMPLETED", () => allIn(ids, "COMPLETED"));
  assert.deepEqual([...calls].sort(), [...ids].sort());
  for (const [n, id] of ids.entries()) {
    assert.deepEqual(JSON.parse((await client.getTask(id)).result ?? ""), { double: n * 2 });
  }
  worker.stop();
  await within("run() to resolve", running);
  const row = await client.processStatus(worker.kind);
  assert.deepEqual([row.status, row.instance_id], ["stopped", worker.instanceId]);
  assert.ok(row.exited_at, "exited_at is set");
});

scenarioTest("slots", "claims no more than its slots", async (t) => {
  const type = unique("ts-slots");
  const ids: number[] = [];
  for (let i = 0; i < 4; i++) ids.push((await client.createTask(type)).task.task_id);
  let started = 0;
  const release = latch();
  const worker = newWorker(client, { concurrency: 2 });
  worker.task(type, async () => {
    started++;
    await release.promise;
  });
  start(t, worker);
  await waitFor("two handlers started", () => started === 2);
  // Both slots are taken, so the worker claims nothing until one frees.
  assert.deepEqual((await Promise.all(ids.map(state))).sort(), ["OPEN", "OPEN", "RUNNING", "RUNNING"]);
  release.resolve();
  await waitFor("four tasks COMPLETED", () => allIn(ids, "COMPLETED"));
});

scenarioTest("listed-alive", "appears in list_processes", async (t) => {
  const type = unique("ts-seen");
  const worker = newWorker(client).task(type, () => undefined);
  start(t, worker);
  await waitFor("the worker listed alive under its kind", async () => {
    const rows = (await client.listProcesses({ kind: worker.kind, alive: true })).processes ?? [];
    return rows.some((r) => r.instance_id === worker.instanceId);
  });
  const row = await client.processStatus(worker.kind);
  assert.deepEqual([row.process_kind, row.status, row.task_types], [worker.kind, "alive", [type]]);
});

scenarioTest("process-stop-drains", "request_process_stop drains and resolves run()", async (t) => {
  // A stop of the worker's kind lets the task in hand finish, then run() resolves and the row reads stopped.
  const type = unique("ts-drain");
  const started = latch();
  const release = latch();
  const worker = newWorker(client).task(type, async () => {
    started.resolve();
    await release.promise;
    return "drained";
  });
  const running = start(t, worker);
  const taskId = (await client.createTask(type)).task.task_id;
  await within("the handler to start", started.promise);
  await waitFor("the worker to report its task", async () => (await client.processStatus(worker.kind)).current_task_id === taskId);
  const stop = await client.requestProcessStop(worker.kind);
  assert.deepEqual([stop.found, stop.instance_id], [true, worker.instanceId]);
  await waitFor("the worker to see the stop", () => worker.draining);
  release.resolve();
  await within("run() to resolve", running);
  const got = await client.getTask(taskId);
  assert.deepEqual([got.state, got.result], ["COMPLETED", "drained"]);
  const row = await client.processStatus(worker.kind);
  assert.deepEqual([row.instance_id, row.status, row.desired_state], [worker.instanceId, "stopped", "stop_requested"]);
  assert.ok(row.exited_at, "exited_at is set");
});

scenarioTest("stop-ends-waiting-claim", "a stop ends a waiting claim", async (t) => {
  // A worker long-polling for work hears of its stop from the claim itself (stop_requested): with its next liveness
  // report an hour away, run() resolves once the process is asked to stop. (The hub ends the waiting claim at once,
  // TestClaimForAProcessAskedToStop; were it not to, the next claim would say so, a wait later.)
  const worker = newWorker(client, { livenessIntervalS: 3600, claimWaitS: 60 }).task(unique("ts-idle"), async () => "never");
  const running = start(t, worker);
  await waitFor("the worker's first report", async () => ((await client.listProcesses({ kind: worker.kind })).processes ?? []).length > 0);
  await client.requestProcessStop(worker.kind);
  await within("run() to resolve", running, DEADLINE_MS + 60_000);
  assert.ok(worker.draining);
});

scenarioTest("sigterm-drains", "SIGTERM drains a worker process", async (t) => {
  // A worker in a process of its own drains on SIGTERM: run() resolves, the process exits 0, the row reads stopped.
  const kind = unique("ts-worker");
  const proc = workerProcess(t, kind, unique("ts-sig"));
  await waitFor("the worker process alive", async () => (await client.processStatus(kind)).status === "alive");
  proc.child.kill("SIGTERM");
  const { code } = await within("the worker process to exit", proc.exited);
  assert.deepEqual([code, proc.out()], [0, "run resolved\n"], proc.err());
  const row = await client.processStatus(kind);
  assert.deepEqual([row.pid, row.status], [proc.child.pid, "stopped"]);
  assert.ok(row.exited_at, "exited_at is set");
});

scenarioTest("stop-task-aborts", "stop_task aborts a running handler", async (t) => {
  const type = unique("ts-abort");
  const started = latch();
  const seen: unknown[] = [];
  const worker = newWorker(client).task(type, async (_task: Task, ctx: TaskContext) => {
    started.resolve();
    await within("the abort", new Promise((resolve) => ctx.signal.addEventListener("abort", resolve)));
    seen.push(ctx.signal.reason);
    return "should not be recorded";
  });
  start(t, worker);
  const taskId = (await client.createTask(type)).task.task_id;
  await within("the handler to start", started.promise);
  // stop_task waits for the worker's confirmation: abort_confirmed, in its answer and on the task.
  const stop = await client.stopTask(taskId, "operator stop", { deadline: `${DEADLINE_MS / 1000}s` });
  assert.deepEqual([stop.from, stop.task.state], ["RUNNING", "STOPPED"]);
  assert.equal(stop.abort?.outcome, "abort_confirmed");
  const got = await client.getTask(taskId);
  assert.deepEqual([got.state, got.last_abort?.outcome], ["STOPPED", "abort_confirmed"]);
  assert.notEqual(got.result, "should not be recorded");
  assert.deepEqual(seen, ["abort"]);
});

scenarioTest("handler-error-fails", "a handler's error fails the attempt", async (t) => {
  const type = unique("ts-fail");
  const worker = newWorker(client).task(type, () => {
    throw new PermanentFailure("bad input");
  });
  start(t, worker);
  const taskId = (await client.createTask(type)).task.task_id;
  await waitFor("the task FAILED", async () => (await state(taskId)) === "FAILED");
  assert.equal((await client.getTask(taskId)).last_error, "PermanentFailure: bad input");
});

scenarioTest("update-restarts", "a material update_task restarts the attempt", async (t) => {
  // update_task with a new payload stops the running attempt (its handler sees the abort), applies the edit and
  // starts the task again: the update answers abort_confirmed and the next attempt works the new payload.
  const type = unique("ts-update");
  const started = latch();
  const runs: unknown[] = [];
  const worker = newWorker(client).task(type, async (task: Task, ctx: TaskContext) => {
    const { v } = task.payload as { v: number };
    runs.push(task.payload);
    if (v === 1) {
      started.resolve();
      await within("the abort", new Promise((resolve) => ctx.signal.addEventListener("abort", resolve)));
      return "v1 should not be recorded";
    }
    return `done v${v}`;
  });
  start(t, worker);
  const taskId = (await client.createTask(type, { payload: { v: 1 } })).task.task_id;
  await within("the handler to start", started.promise);
  const up = await client.updateTask(taskId, { payload: { v: 2 }, deadline: `${DEADLINE_MS / 1000}s` });
  assert.deepEqual([up.path, up.abort?.outcome], ["stop_apply_start", "abort_confirmed"]);
  await waitFor("the task COMPLETED", async () => (await state(taskId)) === "COMPLETED");
  const got = await client.getTask(taskId);
  assert.deepEqual([got.result, got.restarts, got.revision], ["done v2", 1, 2]);
  assert.deepEqual(runs, [{ v: 1 }, { v: 2 }]);
});

scenarioTest("kill-reclaimed", "a killed worker's task is reclaimed and done once", async (t) => {
  // kill -9 of a worker process holding a task: once its lease (2 s) runs out the hub's lease reaper takes the task
  // back (the hubs of TestTypeScriptSDK reap every second) and another worker completes it, once.
  const type = unique("ts-kill");
  const kind = unique("ts-worker");
  const proc = workerProcess(t, kind, type, "--lease-s", "2", "--hold");
  const taskId = (await client.createTask(type)).task.task_id;
  await waitFor("the worker process to hold the task", async () => {
    const got = await client.getTask(taskId);
    return got.state === "RUNNING" && (got.claimed_by ?? "").startsWith(`${kind}:`);
  });
  proc.child.kill("SIGKILL");
  assert.deepEqual(await within("the killed worker process to exit", proc.exited), { code: null, signal: "SIGKILL" });
  const calls: number[] = [];
  const worker = newWorker(client).task(type, (task: Task) => {
    calls.push(task.id);
    return "done by the second";
  });
  start(t, worker);
  await waitFor("the task COMPLETED", async () => (await state(taskId)) === "COMPLETED");
  const got = await client.getTask(taskId);
  const events = got.events ?? [];
  const done = events.filter((e) => e.to === "COMPLETED").map((e) => e.actor);
  const reclaimed = events.some((e) => e.actor === "reaper" && e.reason === "lease expired" && e.from === "RUNNING" && e.to === "OPEN");
  assert.deepEqual([got.result, calls, done], ["done by the second", [taskId], [worker.name]]);
  assert.ok(reclaimed, JSON.stringify(events));
});

hubTest("request_input hands the task to a person", async (t) => {
  // A handler that asks a question leaves the task in NEEDS_INPUT, with its evidence; the worker writes nothing after.
  const type = unique("ts-ask");
  const worker = newWorker(client).task(type, async (_task: Task, ctx: TaskContext) => {
    await ctx.addEvidence("log", "looked at it");
    await ctx.requestInput("which file?");
    return "not a result";
  });
  start(t, worker);
  const taskId = (await client.createTask(type)).task.task_id;
  await waitFor("the task NEEDS_INPUT", async () => (await state(taskId)) === "NEEDS_INPUT");
  const got = await client.getTask(taskId);
  assert.equal(got.question, "which file?");
  assert.notEqual(got.result, "not a result");
});
