// A client of the cks hub's HTTP API, on Node's built-in fetch alone.
//
// client.call(name, input) calls any operation of the hub by its name, routed
// by the operation table generated from the hub's OpenAPI document
// (src/operations.ts); the typed methods below are that call with the
// operation's required fields as arguments. Inputs and answers are typed by
// src/openapi.d.ts, generated from the same document: answers are the hub's
// JSON objects exactly as GET /v1/openapi.json describes them.

import type { components, operations } from "./openapi.js";
import { OPERATIONS, type OperationName } from "./operations.js";
import { CksError, InvalidArgument, Unavailable, errorFor } from "./errors.js";

/** The hub's URL when neither the options nor CKS_URL give one. */
export const DEFAULT_URL = "http://127.0.0.1:7433";

/** A schema of the hub's OpenAPI document by name: Schema<"Task">, Schema<"Process">… */
export type Schema<N extends keyof components["schemas"]> = components["schemas"][N];

type Op<N extends OperationName> = N extends keyof operations ? operations[N] : never;
/** A part of an operation's input that may be `never` or absent: as an object type, {} when none. */
type Part<T> = [Exclude<T, undefined>] extends [never] ? {} : Exclude<T, undefined> extends object ? Exclude<T, undefined> : {};
type PathOf<O> = O extends { parameters: { path?: infer P } } ? Part<P> : {};
/** A query's fields, each array field taking one item too (the query repeats an array's name per item). */
type QueryOf<O> = O extends { parameters: { query?: infer Q } } ? OneOrMany<Part<Q>> : {};
type OneOrMany<Q> = { [K in keyof Q]: Q[K] extends readonly (infer E)[] | undefined ? E | E[] | Q[K] : Q[K] };
type BodyOf<O> = O extends { requestBody?: infer R } ? Part<R> extends { content: { "application/json": infer B } } ? Part<B> : {} : {};

/** The input of operation N: its path fields, query fields and JSON body's fields, as one object. */
export type Input<N extends OperationName> = PathOf<Op<N>> & QueryOf<Op<N>> & BodyOf<Op<N>>;

/** The answer of operation N: its JSON object ({} for an empty, 204 answer). */
export type Output<N extends OperationName> = Op<N> extends { responses: { 200: { content: { "application/json": infer A } } } }
  ? A
  : Op<N> extends { responses: { 201: { content: { "application/json": infer A } } } }
    ? A
    : Record<string, never>;

/** An input's fields other than the ones a method takes as arguments. */
export type Rest<N extends OperationName, K extends string> = Omit<Input<N>, K>;

/** Where a Client logs its retries. */
export interface ClientLogger {
  warn(message: string): void;
}

/** Options of a Client; every one has a default. */
export interface ClientOptions {
  /** The hub's URL; default CKS_URL, else http://127.0.0.1:7433. */
  url?: string;
  /** The bearer token; default CKS_TOKEN. */
  token?: string;
  /** Each HTTP request's timeout in ms (default 30000); a long-polling claim gets its wait_s on top, a stop its deadline. */
  timeoutMs?: number;
  /** How often a retryable failure is sent again before it is thrown (default 4). */
  retries?: number;
  /** The first retry's wait in ms (default 500), doubled each time up to maxBackoffMs, each a random half to all of it. */
  backoffMs?: number;
  /** The cap of a retry's wait in ms (default 10000). */
  maxBackoffMs?: number;
  /** Where retries are logged (default: console.warn with a "cks:" prefix). */
  logger?: ClientLogger;
}

/** Per-call options of Client.call. */
export interface CallOptions {
  /** This call's timeout in ms instead of the client's. */
  timeoutMs?: number;
}

/**
 * A connection to one hub: its URL, a bearer token, timeouts and the retry policy.
 *
 * An answer 429 or 503, or a connection the hub refused, is retried up to
 * `retries` times with jittered exponential backoff, waiting the answer's
 * Retry-After (capped at 60 s) when it gives one; a connection lost (or timed
 * out) after the request was sent is retried for GET only, since a write may
 * have happened. Calls are independent: one Client serves any number at once.
 */
export class Client {
  readonly url: string;
  readonly token: string;
  readonly timeoutMs: number;
  readonly retries: number;
  readonly backoffMs: number;
  readonly maxBackoffMs: number;
  private readonly logger: ClientLogger;

  constructor(options: ClientOptions = {}) {
    this.url = (options.url || process.env["CKS_URL"] || DEFAULT_URL).replace(/\/+$/, "");
    this.token = options.token ?? process.env["CKS_TOKEN"] ?? "";
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.retries = options.retries ?? 4;
    this.backoffMs = options.backoffMs ?? 500;
    this.maxBackoffMs = options.maxBackoffMs ?? 10_000;
    this.logger = options.logger ?? { warn: (m) => console.warn(`cks: ${m}`) };
  }

  // -- the generic call -------------------------------------------------

  /**
   * Call the hub's operation `name` with `input` and resolve to its answer.
   *
   * Path fields ({task_id}…) are taken from input; for GET and DELETE the
   * other fields become the query (an array repeats its name, a boolean is
   * true/false, null and undefined are left out), for other methods the JSON
   * body. An empty answer (204) is {}. Rejects with a CksError subclass for an
   * error answer, Unavailable (status 0) when the hub cannot be reached.
   */
  async call<N extends OperationName>(name: N, input?: Input<N>, options: CallOptions = {}): Promise<Output<N>> {
    const route = OPERATIONS[name] as readonly [string, string] | undefined;
    if (route === undefined) {
      throw new TypeError(`cks: no operation ${JSON.stringify(name)} in the operation table`);
    }
    const [method, template] = route;
    const rest: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(input ?? {})) {
      if (v !== undefined && v !== null) rest[k] = v;
    }
    let missing: string | undefined;
    const path = template.replace(/\{([^}]+)\}/g, (_, field: string) => {
      if (!(field in rest)) {
        missing ??= field;
        return "";
      }
      const value = text(rest[field]);
      delete rest[field];
      return encodeURIComponent(value);
    });
    if (missing !== undefined) {
      throw new InvalidArgument(0, "invalid_argument", `${name} needs ${missing} for its path`, missing);
    }
    let target = path;
    let body: string | undefined;
    if (method === "GET" || method === "DELETE") {
      const query = new URLSearchParams();
      for (const k of Object.keys(rest).sort()) {
        const v = rest[k];
        for (const item of Array.isArray(v) ? v : [v]) query.append(k, text(item));
      }
      const q = query.toString();
      if (q) target += "?" + q;
    } else if (Object.keys(rest).length > 0) {
      body = JSON.stringify(rest);
    }
    return (await this.send(method, target, body, options.timeoutMs ?? this.timeoutMs)) as Output<N>;
  }

  /** Send one request, retrying what may be retried, and decode the answer. */
  private async send(method: string, path: string, body: string | undefined, timeoutMs: number): Promise<unknown> {
    for (let attempt = 0; ; attempt++) {
      const outcome = await this.once(method, path, body, timeoutMs);
      if (!(outcome instanceof Retryable)) return outcome;
      if (attempt >= this.retries) throw outcome.error;
      const delay = outcome.retryAfterMs ?? this.backoff(attempt);
      this.logger.warn(`${method} ${path.split("?")[0]}: ${outcome.error}; retrying in ${(delay / 1000).toFixed(1)}s`);
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }

  /** The wait before retry number attempt+1: exponential, capped, with jitter (half to all of it). */
  private backoff(attempt: number): number {
    return Math.min(this.maxBackoffMs, this.backoffMs * 2 ** attempt) * (0.5 + Math.random() / 2);
  }

  /** One attempt: the decoded answer, or a Retryable failure; throws what is not retried. */
  private async once(method: string, path: string, body: string | undefined, timeoutMs: number): Promise<unknown> {
    const headers: Record<string, string> = { Accept: "application/json" };
    if (this.token) headers["Authorization"] = `Bearer ${this.token}`;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let resp: Response;
    let raw: string;
    try {
      resp = await fetch(this.url + path, { method, headers, body, signal: AbortSignal.timeout(timeoutMs) });
      raw = await resp.text();
    } catch (e) {
      const err = new Unavailable(0, "unreachable", `${method} ${this.url}${path.split("?")[0]}: ${reason(e)}`);
      // A refused connection sent nothing; anything else (a reset, a
      // timeout) may have reached the hub, so only a read is sent again.
      if (refused(e) || method === "GET") return new Retryable(err, undefined);
      throw err;
    }
    if (!resp.ok) {
      const err = decodeError(resp.status, raw);
      if (resp.status === 429 || resp.status === 503) {
        return new Retryable(err, retryAfterMs(resp.headers.get("Retry-After")));
      }
      throw err;
    }
    if (raw.trim() === "") return {};
    const answer: unknown = JSON.parse(raw);
    return typeof answer === "object" && answer !== null && !Array.isArray(answer) ? answer : { value: answer };
  }

  // -- tasks: create, read, control --------------------------------------

  /** Create a task of `type`; answers {task, created} (created false: a dedupe_key matched). */
  createTask(type: string, fields: Rest<"create_task", "type"> = {}): Promise<Output<"create_task">> {
    return this.call("create_task", { ...fields, type });
  }

  /** The task with its history: current attempt, aborts, last_abort, events… */
  getTask(taskId: number): Promise<Output<"get_task">> {
    return this.call("get_task", { task_id: taskId });
  }

  /** A page of tasks ({tasks, next_cursor}); filters by name: state and type take one or an array. */
  listTasks(filters: Input<"list_tasks"> = {}): Promise<Output<"list_tasks">> {
    return this.call("list_tasks", filters);
  }

  /**
   * Hold the task in STOPPED; a running attempt is asked to abort and, with
   * wait (the default), the call waits up to deadline ("30s" unless given) for
   * the worker's confirmation: answers {task, from, abort: {outcome: "abort_confirmed"|…}}.
   * The HTTP timeout is the client's plus the deadline.
   */
  stopTask(taskId: number, reason: string, fields: Rest<"stop_task", "task_id" | "reason"> = {}): Promise<Output<"stop_task">> {
    return this.call("stop_task", { ...fields, task_id: taskId, reason }, { timeoutMs: this.timeoutMs + durationMs(fields.deadline) });
  }

  /** Edit the task (title, description, payload, priority…); answers {task, path, …}. The HTTP timeout gets the abort deadline on top. */
  updateTask(taskId: number, patch: Rest<"update_task", "task_id">): Promise<Output<"update_task">> {
    return this.call("update_task", { ...patch, task_id: taskId }, { timeoutMs: this.timeoutMs + durationMs(patch.deadline) });
  }

  /** Cancel the task for good; answers the task. */
  cancelTask(taskId: number, reason?: string): Promise<Output<"cancel_task">> {
    return this.call("cancel_task", { task_id: taskId, reason });
  }

  // -- tasks: the worker protocol ----------------------------------------

  /**
   * Lease up to n OPEN tasks of the types: {tasks: [… each with lease_token], agent_tokens}.
   *
   * With nothing to claim the hub holds the call up to wait_s (0 to 60)
   * seconds; the HTTP timeout is the client's plus wait_s. running claims
   * straight into RUNNING (no markRunning after it). tasks is always an array
   * here (the hub may answer null).
   */
  async claimTasks(fields: Input<"claim_tasks"> = {}): Promise<Output<"claim_tasks"> & { tasks: Schema<"ClaimedTask">[] }> {
    const answer = await this.call("claim_tasks", fields, { timeoutMs: this.timeoutMs + (fields.wait_s ?? 0) * 1000 });
    return { ...answer, tasks: answer.tasks ?? [] };
  }

  /** Move a CLAIMED task to RUNNING under its lease; answers the task. */
  markRunning(taskId: number, leaseToken: string): Promise<Output<"mark_running">> {
    return this.call("mark_running", { task_id: taskId, lease_token: leaseToken });
  }

  /**
   * Renew the lease (the heartbeat): {held, abort_requested}. held false: the
   * lease is lost, stop; with abort_requested an operator stopped the attempt
   * and waits for confirmAbort.
   */
  touchTask(taskId: number, leaseToken: string): Promise<Output<"touch_task">> {
    return this.call("touch_task", { task_id: taskId, lease_token: leaseToken });
  }

  /** End the attempt with its result (COMPLETED, or NEEDS_REVIEW); Conflict (lease_lost) if fenced. */
  completeTask(taskId: number, leaseToken: string, result = "", fields: Rest<"complete_task", "task_id" | "lease_token" | "result"> = {}): Promise<Output<"complete_task">> {
    return this.call("complete_task", { ...fields, task_id: taskId, lease_token: leaseToken, result });
  }

  /** End the attempt as failed; retryable sends the task back to OPEN (after a backoff) while attempts remain. */
  failTask(taskId: number, leaseToken: string, reason = "", fields: Rest<"fail_task", "task_id" | "lease_token" | "reason"> = {}): Promise<Output<"fail_task">> {
    return this.call("fail_task", { ...fields, task_id: taskId, lease_token: leaseToken, reason });
  }

  /** Ask a person a question: the task goes to NEEDS_INPUT and the lease ends; answers the task. */
  requestInput(taskId: number, leaseToken: string, question: string): Promise<Output<"request_input">> {
    return this.call("request_input", { task_id: taskId, lease_token: leaseToken, question });
  }

  /**
   * Record what one call of the current attempt spent: cost in USD as a
   * decimal string ("0.0125"; a number is refused: floats round). The answer
   * has budget_exceeded when the report used the task's budget up: the task
   * is NEEDS_INPUT and this attempt aborted (docs/spend.md).
   */
  reportUsage(taskId: number, leaseToken: string, usage: Rest<"report_usage", "task_id" | "lease_token">): Promise<Output<"report_usage">> {
    return this.call("report_usage", { ...usage, task_id: taskId, lease_token: leaseToken });
  }

  /** Sums of the tokens and cost reported: by model, type, key, task, attempt, agent or principal, over since, every bucket. */
  getUsage(query: Input<"get_usage"> = {}): Promise<Output<"get_usage">> {
    return this.call("get_usage", query);
  }

  /** Confirm, with the revoked lease token, that the aborted attempt's work stopped; answers the abort. */
  confirmAbort(taskId: number, leaseToken: string): Promise<Output<"confirm_abort">> {
    return this.call("confirm_abort", { task_id: taskId, lease_token: leaseToken });
  }

  /** Append a chunk of live output (at most 64 KiB of text) to the current attempt. */
  appendOutput(taskId: number, leaseToken: string, text: string, stream = ""): Promise<Output<"append_output">> {
    return this.call("append_output", { task_id: taskId, lease_token: leaseToken, text, ...(stream ? { stream } : {}) });
  }

  /** A page of a task's live output after seq `after` (pass `next_after` for the next). */
  getOutput(taskId: number, after = 0, limit = 0): Promise<Output<"get_output">> {
    return this.call("get_output", { task_id: taskId, ...(after ? { after } : {}), ...(limit ? { limit } : {}) });
  }

  /** Record evidence of the current attempt (a log, a link, a workspace path…). */
  addEvidence(taskId: number, leaseToken: string, kind: string, body: string): Promise<Output<"add_evidence">> {
    return this.call("add_evidence", { task_id: taskId, lease_token: leaseToken, kind, body });
  }

  // -- processes: liveness and remote stop ---------------------------------

  /**
   * Report this process alive (or, with exited, gone); answers its row, whose
   * desired_state is "stop_requested" once someone asked it to stop.
   */
  reportProcess(processKind: string, instanceId: string, fields: Rest<"report_process", "process_kind" | "instance_id"> = {}): Promise<Output<"report_process">> {
    return this.call("report_process", { ...fields, process_kind: processKind, instance_id: instanceId });
  }

  /** The newest instance of a process kind: its row (status "not_found", not an error, when none ever reported). */
  processStatus(processKind: string): Promise<Output<"process_status">> {
    return this.call("process_status", { process_kind: processKind });
  }

  /** A page of process instances: {processes, next_cursor}. */
  listProcesses(filters: Input<"list_processes"> = {}): Promise<Output<"list_processes">> {
    return this.call("list_processes", filters);
  }

  /** Ask the kind's alive instance to drain and exit: {found, instance_id, process_kind}. */
  requestProcessStop(processKind: string): Promise<Output<"request_process_stop">> {
    return this.call("request_process_stop", { process_kind: processKind });
  }
}

/** A failed attempt that may be sent again: the error to throw when retries run out. */
class Retryable {
  constructor(
    readonly error: CksError,
    readonly retryAfterMs: number | undefined,
  ) {}
}

/** A value as path or query text: booleans as true/false, the rest as String(). */
function text(v: unknown): string {
  return typeof v === "boolean" ? (v ? "true" : "false") : String(v);
}

/** The typed error of an error answer, its body read as the hub writes it. */
function decodeError(status: number, raw: string): CksError {
  try {
    const e = (JSON.parse(raw) as { error?: { code?: unknown; message?: unknown; field?: unknown } }).error;
    if (e && typeof e.code === "string" && typeof e.message === "string") {
      return errorFor(status, e.code, e.message, typeof e.field === "string" ? e.field : undefined);
    }
  } catch {
    // not JSON: the body as the message
  }
  return errorFor(status, `http_${status}`, raw.trim().slice(0, 500));
}

/** A Retry-After header in ms (seconds or an HTTP date), at most 60 s; undefined when absent or bad. */
function retryAfterMs(value: string | null): number | undefined {
  if (!value) return undefined;
  let seconds = Number(value);
  if (Number.isNaN(seconds)) {
    const at = Date.parse(value);
    if (Number.isNaN(at)) return undefined;
    seconds = (at - Date.now()) / 1000;
  }
  return Math.min(60, Math.max(0, seconds)) * 1000;
}

/** Whether fetch failed because the hub refused the connection (nothing was sent). */
function refused(e: unknown): boolean {
  const cause = e instanceof Error ? (e.cause as { code?: unknown } | undefined) : undefined;
  return cause?.code === "ECONNREFUSED";
}

/** Why fetch failed, in words: the cause's message when it has one (fetch's own is "fetch failed"). */
function reason(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  if (e.name === "TimeoutError") return "timed out";
  const cause = e.cause;
  return cause instanceof Error ? cause.message : e.message;
}

/** A Go-style duration the hub takes ("30s", "2m", "1500ms") in ms; 30 s when unset, 600 s when unread. */
export function durationMs(duration: unknown): number {
  if (!duration) return 30_000;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(String(duration));
  if (!m) return 600_000;
  const scale = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as "ms" | "s" | "m" | "h"];
  return Number(m[1]) * scale;
}
