// Helpers of the tests that run against a real hub (CKS_URL, CKS_TOKEN: an admin token).

import { randomUUID } from "node:crypto";
import { test, type TestContext } from "node:test";
import { Client, Worker, type WorkerOptions } from "../src/index.js";

/** The longest any condition is waited for. */
export const DEADLINE_MS = 30_000;

/** Short settings keep the tests quick; the waits are on conditions, with DEADLINE_MS to spare. */
export const FAST: WorkerOptions = { leaseS: 3, livenessIntervalS: 1, claimWaitS: 2 };

/** Why the hub tests skip, or undefined when CKS_URL and CKS_TOKEN are set. */
export const noHub =
  process.env["CKS_URL"] && process.env["CKS_TOKEN"]
    ? undefined
    : "CKS_URL and CKS_TOKEN are unset: these tests need a running hub and its admin token";

/** A test against the hub, skipped (each on its own, so the skip is counted) when there is none. */
export function hubTest(name: string, fn: (t: TestContext) => Promise<void>): void {
  test(name, { skip: noHub }, fn);
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
