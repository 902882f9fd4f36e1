// A worker in a process of its own, for the tests that need one (kill -9, SIGTERM):
//
//   node dist-test/test/worker-process.js KIND TYPE [--lease-s S] [--hold]
//
// Runs a Worker of KIND (CKS_URL, CKS_TOKEN) for task type TYPE until it is drained
// (SIGTERM, SIGINT or a stop request), then prints "run resolved". Its handler returns at
// once, or with --hold waits for its attempt's abort.

import { parseArgs } from "node:util";
import { Worker, type Task, type TaskContext } from "../src/index.js";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { "lease-s": { type: "string", default: "6" }, hold: { type: "boolean", default: false } },
});
const [kind, type] = positionals;
if (kind === undefined || type === undefined) {
  console.error("usage: worker-process.js KIND TYPE [--lease-s S] [--hold]");
  process.exit(2);
}
const worker = new Worker(undefined, { kind, leaseS: Number(values["lease-s"]), livenessIntervalS: 1, claimWaitS: 2 });
worker.task(type, async (_task: Task, ctx: TaskContext) => {
  if (values.hold) await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
});
await worker.run();
console.log("run resolved");
