// An LLM agent on the cks TypeScript SDK: it works the tasks of one type by asking an
// OpenAI-compatible chat completions endpoint, and completes each with the model's answer.
//
//   (cd sdk/typescript && npm ci && npm run build)            # from a checkout of the repository
//   (cd examples/typescript-llm-agent && npm ci && npm run build)
//   export CKS_URL=http://127.0.0.1:7433 CKS_TOKEN=cks_...
//   export OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-... OPENAI_MODEL=gpt-4o-mini
//   node dist/agent.js --type summarize
//
// A task's text is its payload's "text" (else its description, else its title); the model is
// told what to do with it by --system. Node's fetch, no other dependency. The agent is a cks
// worker: it long-polls for tasks, heartbeats their leases, shows in `cks process list` and
// drains on `cks process stop KIND` or SIGTERM. An operator's stop (`cks task stop`) aborts
// the handler's signal, which aborts the request to the provider at once. A 429 (or 503) of
// the provider is asked again after its Retry-After, within the attempt, while that wait is
// at most --max-wait-s and --retries allow; beyond, the attempt fails retryably, which gives
// the task back (OPEN again after the hub's backoff, while its max_attempts allow).

import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { PermanentFailure, Worker, type Task, type TaskContext } from "cks";

const SUMMARIZE = "Summarize the text you are given in a few sentences. Answer with the summary alone.";

/** The provider kept refusing for now (429, 503) past what one attempt waits: thrown from the handler, it fails the attempt retryably, which gives the task back. */
export class ProviderBusy extends Error {
  override name = "ProviderBusy";
}

/** An OpenAI-compatible chat completions endpoint: baseUrl (…/v1), its key and the model. */
export interface Provider {
  baseUrl: string;
  apiKey: string;
  model: string;
  timeoutMs: number;
  retries: number;
  maxWaitS: number;
}

export interface Message {
  role: "system" | "user" | "assistant";
  content: string;
}

/**
 * The model's answer to messages. A 429 or 503 is asked again after the answer's Retry-After
 * (else 1, 2, 4… s) up to p.retries times, while the wait is at most p.maxWaitS; past that,
 * ProviderBusy. Another 4xx is a PermanentFailure (asking again cannot help); a 5xx or a failed
 * connection, an error the worker fails the attempt with retryably. signal (the task's abort)
 * aborts the request in flight, or the wait before the next.
 */
export async function chat(p: Provider, messages: Message[], signal: AbortSignal): Promise<string> {
  const body = JSON.stringify({ model: p.model, messages });
  for (let attempt = 0; ; attempt++) {
    const resp = await fetch(`${p.baseUrl.replace(/\/+$/, "")}/chat/completions`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${p.apiKey}` },
      body,
      signal: AbortSignal.any([signal, AbortSignal.timeout(p.timeoutMs)]),
    });
    const text = await resp.text();
    if (resp.ok) return answerOf(text);
    if (resp.status === 429 || resp.status === 503) {
      const waitS = retryAfterS(resp.headers.get("Retry-After")) ?? 2 ** attempt;
      if (attempt >= p.retries || waitS > p.maxWaitS) {
        throw new ProviderBusy(`the provider answered ${resp.status}, retry after ${Math.round(waitS)}s`);
      }
      console.info(`the provider answered ${resp.status}: asking again in ${waitS.toFixed(1)}s`);
      await sleep(waitS * 1000, undefined, { signal });
      continue;
    }
    if (resp.status >= 400 && resp.status < 500 && resp.status !== 408) {
      throw new PermanentFailure(`the provider refused the request (${resp.status}): ${text.slice(0, 500)}`);
    }
    throw new Error(`the provider failed (${resp.status}): ${text.slice(0, 500)}`);
  }
}

/** The first choice's message content of a chat completion. */
function answerOf(raw: string): string {
  let content: unknown;
  try {
    content = (JSON.parse(raw) as { choices?: { message?: { content?: unknown } }[] }).choices?.[0]?.message?.content;
  } catch {
    content = undefined;
  }
  if (typeof content !== "string") throw new Error(`the provider's answer is not a chat completion: ${raw.slice(0, 200)}`);
  return content;
}

/** Retry-After in seconds (a number of seconds or an HTTP date), or undefined when absent or unreadable. */
function retryAfterS(value: string | null): number | undefined {
  if (!value) return undefined;
  const s = Number(value);
  if (Number.isFinite(s)) return Math.max(0, s);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, (at - Date.now()) / 1000);
}

/** What the model is given: the payload's "text", else the description, else the title. */
export function textOf(task: Task): string {
  const payload = task.payload as { text?: unknown } | null;
  if (payload && typeof payload === "object" && typeof payload.text === "string") return payload.text;
  return task.description || task.title;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      type: { type: "string", default: "summarize" },
      kind: { type: "string", default: "typescript-llm-agent" },
      concurrency: { type: "string", default: "4" },
      "lease-s": { type: "string", default: "60" },
      system: { type: "string", default: SUMMARIZE },
      retries: { type: "string", default: "3" },
      "max-wait-s": { type: "string", default: "30" },
    },
  });
  const provider: Provider = {
    baseUrl: process.env["OPENAI_BASE_URL"] || "https://api.openai.com/v1",
    apiKey: process.env["OPENAI_API_KEY"] ?? "",
    model: process.env["OPENAI_MODEL"] || "gpt-4o-mini",
    timeoutMs: 120_000,
    retries: Number(values.retries),
    maxWaitS: Number(values["max-wait-s"]),
  };
  const worker = new Worker(undefined, { kind: values.kind, concurrency: Number(values.concurrency), leaseS: Number(values["lease-s"]) });
  worker.task(values.type, async (task: Task, ctx: TaskContext) => {
    const text = textOf(task);
    if (!text) throw new PermanentFailure('the task has no text: give it a payload {"text": ...}, a description or a title');
    return chat(provider, [{ role: "system", content: values.system }, { role: "user", content: text }], ctx.signal);
  });
  await worker.run();
}

await main();
