// A worker process: claims tasks of its types, runs handlers, honours stops, reports liveness.
//
//   const worker = new Worker(new Client(), { kind: "summarizer", concurrency: 4 });
//   worker.task("summarize", async (task, ctx) => ({ summary: String(task.payload).slice(0, 100) }));
//   await worker.run();
//
// The worker follows the hub's worker protocol (claim_tasks describes it): it
// long-polls claim_tasks for as many tasks as it has free slots, straight into
// RUNNING; renews each lease with touch_task every third of the lease; ends
// each attempt with complete_task (the handler's resolved value) or fail_task
// (its rejection). An operator's stop_task reaches it through the heartbeat:
// ctx.signal is aborted and, once the handler has settled, the worker confirms
// the abort with confirm_abort. Every livenessIntervalS it calls
// report_process; when the answer says stop_requested (`cks process stop
// KIND`), on SIGTERM/SIGINT or stop(), it drains: claims nothing more, lets the
// tasks in hand finish, sends a last report with exited and resolves run().
// This is sdk/python's cks.Worker, on one event loop instead of threads.

import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { Client, type Output, type Rest, type Schema } from "./client.js";
import { CksError, Conflict, NotFound } from "./errors.js";

/**
 * Throw from a handler to fail the task for good; any other error fails it
 * retryably (it goes back to OPEN while the task's max_attempts allow).
 */
export class PermanentFailure extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "PermanentFailure";
  }
}

/** A claimed task: the fields a handler reads most, and raw, the claim's whole answer for it. */
export interface Task {
  id: number;
  type: string;
  leaseToken: string;
  title: string;
  description: string;
  acceptanceCriteria: string;
  payload: unknown;
  metadata: Record<string, unknown>;
  attempts: number;
  raw: Schema<"ClaimedTask">;
}

/** The Task of one item of claim_tasks' tasks. */
function taskFromClaim(raw: Schema<"ClaimedTask">): Task {
  return {
    id: raw.task_id,
    type: raw.type,
    leaseToken: raw.lease_token,
    title: raw.title ?? "",
    description: raw.description ?? "",
    acceptanceCriteria: raw.acceptance_criteria ?? "",
    payload: raw.payload,
    metadata: (raw.metadata as Record<string, unknown> | null | undefined) ?? {},
    attempts: raw.attempts ?? 0,
    raw,
  };
}

/**
 * What a handler has besides its task: the abort signal and calls under the task's lease.
 *
 * signal is aborted when the attempt must stop: an operator stopped it (the
 * worker confirms the abort once the handler settles) or the lease was lost.
 * Pass it to what the handler awaits (fetch, timers) or check it between steps.
 */
export class TaskContext {
  readonly client: Client;
  readonly task: Task;
  private readonly controller = new AbortController();
  /** Set once requestInput handed the task to a person. */
  handedOff = false;

  constructor(client: Client, task: Task) {
    this.client = client;
    this.task = task;
  }

  /** Aborted when the attempt must stop; its reason says why ("abort": an operator's stop, "lost": the lease ran out). */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get leaseToken(): string {
    return this.task.leaseToken;
  }

  /** Append a chunk of live output (at most 64 KiB of text) to this attempt: followers see it at once. */
  output(text: string, stream = "stdout"): Promise<Output<"append_output">> {
    return this.client.appendOutput(this.task.id, this.task.leaseToken, text, stream);
  }

  /** Record evidence of this attempt (a log, a link, a workspace path…). */
  addEvidence(kind: string, body: string): Promise<Output<"add_evidence">> {
    return this.client.addEvidence(this.task.id, this.task.leaseToken, kind, body);
  }

  /**
   * Record what one call of this attempt spent (cost in USD, a decimal
   * string). When the report uses the task's budget up, the answer has
   * budget_exceeded and signal is aborted: stop working (the worker
   * confirms the abort once the handler settles).
   */
  async reportUsage(usage: Rest<"report_usage", "task_id" | "lease_token">): Promise<Output<"report_usage">> {
    const answer = await this.client.reportUsage(this.task.id, this.task.leaseToken, usage);
    if (answer.budget_exceeded) this.abort("abort");
    return answer;
  }

  /**
   * Ask a person a question: the task waits in NEEDS_INPUT and this attempt
   * ends (the worker neither completes nor fails it after the handler settles).
   */
  async requestInput(question: string): Promise<Output<"request_input">> {
    const answer = await this.client.requestInput(this.task.id, this.task.leaseToken, question);
    this.handedOff = true;
    return answer;
  }

  /** @internal Abort the attempt's signal, with why. */
  abort(why: "abort" | "lost"): void {
    this.controller.abort(why);
  }
}

/** A handler: its resolved value (a string as is, undefined/null as "", anything else as JSON) is the task's result. */
export type Handler = (task: Task, ctx: TaskContext) => unknown;

/** Where a Worker logs. */
export interface WorkerLogger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** Options of a Worker; every one has a default. */
export interface WorkerOptions {
  /** The process kind it reports as (letters, digits, _ - . :): what `cks process stop KIND` names. Default "typescript-worker". */
  kind?: string;
  /** Tasks worked at once (default 1). */
  concurrency?: number;
  /** Each claim's lease in seconds (default 60), renewed every third of it. */
  leaseS?: number;
  /** Seconds between liveness reports, 1 to 3600 (default 30); a stop request is seen within one. */
  livenessIntervalS?: number;
  /** How long one claim waits for work, 0 to 60 s (default 20); also the longest a drain waits for a claim in flight. */
  claimWaitS?: number;
  /** The executor name its claims record (claimed_by); default KIND:INSTANCE_ID. */
  name?: string;
  /** Whether run() makes SIGTERM and SIGINT start the drain (default true). */
  handleSignals?: boolean;
  /** Where it logs (default: warnings and errors to console.error, info dropped). */
  logger?: WorkerLogger;
}

/** A task being worked: its context, its handler's settling and how its lease ended, if it did. */
interface InHand {
  task: Task;
  ctx: TaskContext;
  since: number;
  ended: "" | "abort" | "lost";
}

const quietInfo: WorkerLogger = {
  info: () => {},
  warn: (m) => console.error(`cks: ${m}`),
  error: (m) => console.error(`cks: ${m}`),
};

/**
 * Runs handlers for task types under one process kind. A Worker runs once:
 * its instanceId names that run.
 */
export class Worker {
  readonly client: Client;
  readonly kind: string;
  readonly concurrency: number;
  readonly leaseS: number;
  readonly livenessIntervalS: number;
  readonly claimWaitS: number;
  readonly instanceId: string = randomUUID();
  readonly name: string;
  private readonly handleSignals: boolean;
  private readonly log: WorkerLogger;
  private readonly handlers = new Map<string, Handler>();
  private readonly inHand = new Map<number, InHand>();
  private started = false;
  private draining_ = false;
  /** What ends the claim loop's current pause (a stop, a slot freed). */
  private readonly wakers = new Set<() => void>();

  constructor(client: Client = new Client(), options: WorkerOptions = {}) {
    this.client = client;
    this.kind = options.kind ?? "typescript-worker";
    this.concurrency = options.concurrency ?? 1;
    if (!Number.isInteger(this.concurrency) || this.concurrency < 1) {
      throw new RangeError("concurrency must be an integer of at least 1");
    }
    this.leaseS = options.leaseS ?? 60;
    this.livenessIntervalS = options.livenessIntervalS ?? 30;
    this.claimWaitS = options.claimWaitS ?? 20;
    this.name = options.name ?? `${this.kind}:${this.instanceId}`;
    this.handleSignals = options.handleSignals ?? true;
    this.log = options.logger ?? quietInfo;
  }

  /** Register handler for taskType (one per type); returns the worker, to chain. */
  task(taskType: string, handler: Handler): this {
    this.handlers.set(taskType, handler);
    return this;
  }

  /** Whether a drain has begun (stop(), a signal or a stop request seen in a liveness answer). */
  get draining(): boolean {
    return this.draining_;
  }

  /** Ask the worker to drain: claim nothing more, finish the tasks in hand, report exited, resolve run(). */
  stop(): void {
    this.draining_ = true;
    this.wake();
  }

  /**
   * Work until drained (a stop request, SIGTERM/SIGINT or stop()). With
   * handleSignals, SIGTERM and SIGINT start the drain; after the first one the
   * listeners are removed, so a second acts as it would have without them.
   */
  async run(): Promise<void> {
    if (this.handlers.size === 0) throw new Error("no handlers: register one with worker.task(TYPE, handler)");
    if (this.started) throw new Error("a Worker runs once; make a new one (a new instanceId)");
    this.started = true;
    const restore = this.handleSignals ? this.installSignals() : () => {};
    this.log.info(`worker ${this.kind} (${this.instanceId}) started: types ${this.types().join(",")}, concurrency ${this.concurrency}`);
    const works = new Set<Promise<void>>();
    const livenessEnd = new AbortController();
    const liveness = this.liveness(livenessEnd.signal);
    try {
      await this.claimLoop(works);
      if (works.size > 0) {
        this.log.info(`worker ${this.kind} draining: ${works.size} task(s) in hand`);
        await Promise.all(works);
      }
    } finally {
      livenessEnd.abort();
      await liveness;
      await this.report(true);
      restore();
      this.log.info(`worker ${this.kind} (${this.instanceId}) exited`);
    }
  }

  // -- the loop ------------------------------------------------------------

  private types(): string[] {
    return [...this.handlers.keys()].sort();
  }

  /** Claim tasks into free slots until draining; each claimed task is worked as its own promise. */
  private async claimLoop(works: Set<Promise<void>>): Promise<void> {
    let failures = 0;
    while (!this.draining_) {
      const free = this.concurrency - this.inHand.size;
      if (free <= 0) {
        await this.pause(Infinity);
        continue;
      }
      let answer;
      try {
        answer = await this.client.claimTasks({
          types: this.types(), n: free, lease_s: this.leaseS, running: true, wait_s: this.claimWaitS, worker: this.name,
          instance_id: this.instanceId,
        });
      } catch (e) {
        if (!(e instanceof CksError)) throw e;
        failures++;
        const delay = Math.min(30, 2 ** failures);
        this.log.warn(`worker ${this.kind}: claim failed (${e}); again in ${delay}s`);
        await this.pause(delay * 1000);
        continue;
      }
      failures = 0;
      if (answer.stop_requested && !this.draining_) {
        // The hub ended the claim: this process was asked to stop.
        this.log.info(`worker ${this.kind}: stop requested: draining`);
        this.stop();
      }
      for (const raw of answer.tasks) {
        // In hand from here, before the next round counts free slots.
        const task = taskFromClaim(raw);
        const held: InHand = { task, ctx: new TaskContext(this.client, task), since: Date.now(), ended: "" };
        this.inHand.set(task.id, held);
        const work = this.work(held).finally(() => {
          works.delete(work);
          this.inHand.delete(task.id);
          this.wake();
        });
        works.add(work);
      }
    }
  }

  /** Run one task's handler under a heartbeat, then end the attempt as it went. */
  private async work(held: InHand): Promise<void> {
    const { task, ctx } = held;
    this.log.info(`worker ${this.kind}: task ${task.id} (${task.type}) claimed`);
    const beating = new AbortController();
    const heartbeat = this.heartbeat(held, beating.signal);
    let outcome: { ok: true; value: unknown } | { ok: false; error: unknown };
    try {
      // A handler that throws before its first await is a rejection too.
      outcome = { ok: true, value: await (async () => this.handlers.get(task.type)!(task, ctx))() };
    } catch (error) {
      outcome = { ok: false, error };
    }
    beating.abort();
    await heartbeat;
    try {
      await this.end(held, outcome);
    } catch (e) {
      // A bug of ours: the lease runs out and the task is claimed again.
      this.log.error(`worker ${this.kind}: task ${task.id}: ${e instanceof Error ? e.stack : e}`);
    }
  }

  /** Renew the lease every third of it; on an abort or a lost lease abort ctx.signal and stop. */
  private async heartbeat(held: InHand, stop: AbortSignal): Promise<void> {
    const { task } = held;
    while (await sleep((this.leaseS / 3) * 1000, stop)) {
      let answer: { held: boolean; abort_requested: boolean };
      try {
        answer = await this.client.touchTask(task.id, task.leaseToken);
      } catch (e) {
        if (e instanceof NotFound || e instanceof Conflict) {
          answer = { held: false, abort_requested: false };
          this.log.warn(`worker ${this.kind}: task ${task.id}: heartbeat refused: ${e}`);
        } else if (e instanceof CksError) {
          // The hub is unreachable: keep trying while the lease lasts.
          this.log.warn(`worker ${this.kind}: task ${task.id}: heartbeat failed: ${e}`);
          continue;
        } else {
          throw e;
        }
      }
      if (answer.held) continue;
      held.ended = answer.abort_requested ? "abort" : "lost";
      this.log.warn(`worker ${this.kind}: task ${task.id}: ${held.ended === "abort" ? "abort requested by an operator" : "lease lost"}`);
      held.ctx.abort(held.ended);
      return;
    }
  }

  /** End the attempt: confirm an abort, or complete or fail it as the handler settled. */
  private async end(held: InHand, outcome: { ok: true; value: unknown } | { ok: false; error: unknown }): Promise<void> {
    const { task } = held;
    if (held.ended === "abort") {
      await this.confirmAbort(task);
      return;
    }
    if (held.ended === "lost" || held.ctx.handedOff) {
      return; // not ours any more (or a person's now): whatever we write would be refused
    }
    let error: unknown = outcome.ok ? undefined : outcome.error;
    let result = "";
    if (outcome.ok) {
      try {
        result = resultText(outcome.value);
      } catch (e) {
        error = new PermanentFailure(`the handler's result is not JSON: ${e instanceof Error ? e.message : e}`);
      }
    }
    try {
      if (error === undefined) {
        await this.client.completeTask(task.id, task.leaseToken, result);
        this.log.info(`worker ${this.kind}: task ${task.id} completed`);
      } else {
        const reason = errorText(error);
        await this.client.failTask(task.id, task.leaseToken, reason, { retryable: !(error instanceof PermanentFailure) });
        this.log.info(`worker ${this.kind}: task ${task.id} failed: ${reason}`);
      }
    } catch (e) {
      if (e instanceof Conflict) {
        // Fenced: the task was stopped or the lease ran out while the
        // handler ran. Nothing was written; if an operator's stop waits
        // for us, say the work has ended.
        this.log.warn(`worker ${this.kind}: task ${task.id}: fenced, result not recorded: ${e}`);
        await this.confirmAbort(task);
      } else if (e instanceof CksError) {
        this.log.error(`worker ${this.kind}: task ${task.id}: could not end the attempt: ${e}`);
      } else {
        throw e;
      }
    }
  }

  /** Tell an operator's waiting stop that this attempt's work has stopped (nothing to confirm is fine). */
  private async confirmAbort(task: Task): Promise<void> {
    try {
      await this.client.confirmAbort(task.id, task.leaseToken);
      this.log.info(`worker ${this.kind}: task ${task.id}: abort confirmed`);
    } catch (e) {
      if (e instanceof NotFound) return;
      if (!(e instanceof CksError)) throw e;
      this.log.warn(`worker ${this.kind}: task ${task.id}: confirm_abort: ${e}`);
    }
  }

  // -- liveness --------------------------------------------------------------

  /** Report every liveness interval until end is aborted; a stop_requested answer starts the drain. */
  private async liveness(end: AbortSignal): Promise<void> {
    do {
      const answer = await this.report(false);
      if (answer?.desired_state === "stop_requested" && !this.draining_) {
        this.log.info(`worker ${this.kind}: stop requested: draining`);
        this.stop();
      }
    } while (await sleep(this.livenessIntervalS * 1000, end));
  }

  /** One report_process call with the oldest task in hand; undefined when it failed (logged). */
  private async report(exited: boolean): Promise<Output<"report_process"> | undefined> {
    let oldest: InHand | undefined;
    for (const h of this.inHand.values()) if (oldest === undefined || h.since < oldest.since) oldest = h;
    const current = oldest !== undefined && !exited ? oldest.task : undefined;
    try {
      return await this.client.reportProcess(this.kind, this.instanceId, {
        hostname: hostname(),
        pid: process.pid,
        liveness_interval_s: this.livenessIntervalS,
        current_task_id: current?.id,
        current_task_type: current?.type,
        task_types: this.types(),
        exited: exited || undefined,
      });
    } catch (e) {
      if (!(e instanceof CksError)) throw e;
      this.log.warn(`worker ${this.kind}: report_process failed: ${e}`);
      return undefined;
    }
  }

  // -- plumbing --------------------------------------------------------------

  /** The claim loop's wait: ms, or less when woken (a stop, a slot freed). */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = Number.isFinite(ms) ? setTimeout(done, ms) : undefined;
      const wakers = this.wakers;
      function done(): void {
        clearTimeout(timer);
        wakers.delete(done);
        resolve();
      }
      wakers.add(done);
    });
  }

  /** End the claim loop's pause now. */
  private wake(): void {
    for (const w of [...this.wakers]) w();
  }

  /** Make SIGTERM and SIGINT start the drain; returns what removes the listeners. */
  private installSignals(): () => void {
    const signals = ["SIGTERM", "SIGINT"] as const;
    const onSignal = (signal: NodeJS.Signals): void => {
      this.log.info(`worker ${this.kind}: ${signal}: draining`);
      restore();
      this.stop();
    };
    const restore = (): void => {
      for (const s of signals) process.removeListener(s, onSignal);
    };
    for (const s of signals) process.on(s, onSignal);
    return restore;
  }
}

/** Wait ms; false, at once, when signal is (or gets) aborted. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * A handler's resolved value as complete_task's result: a string as is,
 * undefined or null as "", anything else as JSON (throws when it is not JSON:
 * a function, a BigInt, a cycle).
 */
function resultText(value: unknown): string {
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  const json: string | undefined = JSON.stringify(value);
  if (json === undefined) throw new TypeError(`a ${typeof value} has no JSON form`);
  return json;
}

/** A handler's rejection as fail_task's reason: "Name: message" for an Error. */
function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
