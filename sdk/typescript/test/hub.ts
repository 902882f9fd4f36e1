// Helpers of the tests that run against a real hub (CKS_URL, CKS_TOKEN: an admin token).

import { spawn, type ChildProcessByStdio } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { test, type TestContext } from "node:test";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { Client, Worker, type WorkerOptions } from "../src/index.js";

/** The longest any condition is waited for. */
export const DEADLINE_MS = 30_000;

/** Short settings keep the tests quick; the waits are on conditions, with DEADLINE_MS to spare. */
export const FAST: WorkerOptions = { leaseS: 6, livenessIntervalS: 1, claimWaitS: 2 };

/** Why the hub tests skip, or undefined when CKS_URL and CKS_TOKEN are set. */
export const noHub =
  process.env["CKS_URL"] && process.env["CKS_TOKEN"]
    ? undefined
    : "CKS_URL and CKS_TOKEN are unset: these tests need a running hub and its admin token";

/** A test against the hub, skipped (each on its own, so the skip is counted) when there is none. */
export function hubTest(name: string, fn: (t: TestContext) => Promise<void>): void {
  test(name, { skip: noHub }, fn);
}

/** The scenario table every client must pass (sdk/scenarios.json, from dist-test/test/): its ids. */
export const SCENARIOS: ReadonlySet<string> = new Set(
  (JSON.parse(readFileSync(new URL("../../../scenarios.json", import.meta.url), "utf8")) as { scenarios: { id: string }[] }).scenarios.map(
    (s) => s.id,
  ),
);

/**
 * A hub test that is scenario `id` of sdk/scenarios.json, named "scenario ID: name": once its body has passed it
 * says "scenario ID ok" (a TAP diagnostic), which TestTypeScriptSDK (cmd/cks) holds to the table. An id the table
 * does not have is refused here, so the file fails to load.
 */
export function scenarioTest(id: string, name: string, fn: (t: TestContext) => Promise<void>): void {
  if (!SCENARIOS.has(id)) throw new Error(`scenario "${id}" is not in sdk/scenarios.json`);
  hubTest(`scenario ${id}: ${name}`, async (t) => {
    await fn(t);
    t.diagnostic(`scenario ${id} ok`);
  });
}

/** A worker process of the tests: its output so far, and its exit (code, or the signal that ended it). */
export interface WorkerProcess {
  child: ChildProcessByStdio<null, Readable, Readable>;
  out: () => string;
  err: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * test/worker-process.ts (a Worker of kind for type in a process of its own) run with args against the hub under
 * test; at the test's end it is killed unless it has exited.
 */
export function workerProcess(t: TestContext, kind: string, type: string, ...args: string[]): WorkerProcess {
  const script = fileURLToPath(new URL("./worker-process.js", import.meta.url));
  const child = spawn(process.execPath, [script, kind, type, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  t.after(async () => {
    child.kill("SIGKILL");
    await exited;
  });
  return { child, out: () => out, err: () => err, exited };
}

/** A client of the hub under test (CKS_URL, CKS_TOKEN). */
export function hubClient(): Client {
  return new Client({ timeoutMs: 30_000 });
}

/** A name no other test uses (task types, process kinds): tests share one hub. */
export function unique(prefix: string): string {
  return `${prefix}-${randomUUID().replaceAll("-", "").slice(0, 10)}`;
}

/** Poll cond until it holds; throw once timeoutMs passes. */
export async function waitFor(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = DEADLINE_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** p, or an error once timeoutMs passes. */
export async function within<T>(what: string, p: Promise<T>, timeoutMs = DEADLINE_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}`)), timeoutMs);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** A promise and its resolve, to be settled from elsewhere (a handler started, a release). */
export function latch<T = void>(): { promise: Promise<T>; resolve: (v: T) => void; done: () => boolean } {
  let resolve!: (v: T) => void;
  let settled = false;
  const promise = new Promise<T>((r) => {
    resolve = (v) => {
      settled = true;
      r(v);
    };
  });
  return { promise, resolve, done: () => settled };
}

/**
 * Run worker (no signal listeners: tests share the process) and return run()'s
 * promise; at the test's end the worker is stopped and run() must resolve in time.
 */
export function start(t: TestContext, worker: Worker): Promise<void> {
  const running = worker.run();
  running.catch(() => {}); // reported by the awaiting test or the cleanup
  t.after(async () => {
    worker.stop();
    await within(`worker ${worker.kind}'s run() to resolve`, running);
  });
  return running;
}

/** A worker of a fresh kind on the hub under test, with FAST settings plus options. */
export function newWorker(client: Client, options: WorkerOptions = {}): Worker {
  return new Worker(client, { kind: unique("ts-worker"), handleSignals: false, ...FAST, ...options });
}
