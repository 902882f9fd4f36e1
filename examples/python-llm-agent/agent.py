"""An LLM agent on the cks Python SDK: it works the tasks of one type by asking an
OpenAI-compatible chat completions endpoint, and completes each with the model's answer.

    pip install ./sdk/python                      # from a checkout of the repository
    export CKS_URL=http://127.0.0.1:7433 CKS_TOKEN=cks_...
    export OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-... OPENAI_MODEL=gpt-4o-mini
    python3 agent.py --type summarize

A task's text is its payload's "text" (else its description, else its title); the model
is told what to do with it by --system. Standard library only. The agent is a cks worker:
it long-polls for tasks, heartbeats their leases, shows in `cks process list` and drains on
`cks process stop KIND` or SIGTERM. An operator's stop (`cks task stop`) cancels the
handler's coroutine, which hangs up the request to the provider at once. A 429 (or 503) of
the provider is asked again after its Retry-After, within the attempt, while that wait is
at most --max-wait-s and --retries allow; beyond, the attempt fails retryably, which gives
the task back (OPEN again after the hub's backoff, while its max_attempts allow).
"""

from __future__ import annotations

import argparse
import asyncio
import email.message
import email.utils
import http.client
import json
import logging
import os
import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

from cks import PermanentFailure, Task, TaskContext, Worker

log = logging.getLogger("llm-agent")

SUMMARIZE = "Summarize the text you are given in a few sentences. Answer with the summary alone."


class ProviderBusy(Exception):
    """The provider kept refusing for now (429, 503) past what one attempt waits: raised from the handler, it
    fails the attempt retryably, which gives the task back."""


@dataclass
class Provider:
    """An OpenAI-compatible chat completions endpoint: base_url (…/v1), its key and the model."""

    base_url: str
    api_key: str
    model: str
    timeout_s: float = 120.0
    retries: int = 3
    max_wait_s: float = 30.0

    async def chat(self, messages: list[dict[str, str]]) -> str:
        """The model's answer to messages.

        A 429 or 503 is asked again after the answer's Retry-After (else 1, 2, 4… s) up to retries times, while
        the wait is at most max_wait_s; past that, ProviderBusy. Another 4xx is PermanentFailure (asking again
        cannot help); a 5xx or a failed connection, an error the worker fails the attempt with retryably.
        Cancelling the coroutine (the task's abort) hangs up the request in flight."""
        body = json.dumps({"model": self.model, "messages": messages}).encode()
        for attempt in range(self.retries + 1):
            status, headers, data = await self._post("/chat/completions", body)
            if status == 200:
                return _answer(data)
            if status in (429, 503):
                wait = _retry_after(headers.get("Retry-After"), default=float(2**attempt))
                if attempt == self.retries or wait > self.max_wait_s:
                    raise ProviderBusy(f"the provider answered {status}, retry after {wait:.0f}s")
                log.info("the provider answered %d: asking again in %.1fs", status, wait)
                await asyncio.sleep(wait)
                continue
            text = data[:500].decode("utf-8", "replace")
            if 400 <= status < 500 and status != 408:
                raise PermanentFailure(f"the provider refused the request ({status}): {text}")
            raise RuntimeError(f"the provider failed ({status}): {text}")
        raise AssertionError("not reached")

    async def _post(self, path: str, body: bytes) -> tuple[int, email.message.Message, bytes]:
        url = urllib.parse.urlsplit(self.base_url.rstrip("/") + path)
        https = url.scheme == "https"
        conn: http.client.HTTPConnection = (http.client.HTTPSConnection if https else http.client.HTTPConnection)(
            url.hostname or "", url.port, timeout=self.timeout_s)
        call = _Call(conn, url.path + (f"?{url.query}" if url.query else ""), body,
                     {"Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"})
        try:
            return await asyncio.get_running_loop().run_in_executor(None, call.send)
        except asyncio.CancelledError:
            call.hang_up()
            raise


class _Call:
    """One POST on a thread of the event loop's executor, which the loop can hang up: hang_up shuts the
    connection's socket down, ending the request wherever it is (sending, or waiting for the answer)."""

    def __init__(self, conn: http.client.HTTPConnection, target: str, body: bytes, headers: dict[str, str]) -> None:
        self.conn, self.target, self.body, self.headers = conn, target, body, headers
        self.hung_up = threading.Event()

    def send(self) -> tuple[int, email.message.Message, bytes]:
        try:
            self.conn.connect()
            # Hung up while connecting: conn.sock was not there to shut down (hang_up sets the event first).
            if self.hung_up.is_set():
                raise ConnectionAbortedError("hung up")
            self.conn.request("POST", self.target, self.body, self.headers)
            resp = self.conn.getresponse()
            return resp.status, resp.headers, resp.read()
        finally:
            self.conn.close()

    def hang_up(self) -> None:
        self.hung_up.set()
        sock = self.conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # closed meanwhile
                pass


def _answer(data: bytes) -> str:
    """The first choice's message content of a chat completion."""
    try:
        content = json.loads(data)["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as e:
        raise RuntimeError(f"the provider's answer is not a chat completion: {data[:200]!r}") from e
    if not isinstance(content, str):
        raise RuntimeError("the provider's answer has no text")
    return content


def _retry_after(value: str | None, default: float) -> float:
    """Retry-After in seconds (a number of seconds or an HTTP date), or default when absent or unreadable."""
    if not value:
        return default
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return default


def text_of(task: Task) -> str:
    """What the model is given: the payload's "text", else the description, else the title."""
    payload: Any = task.payload
    if isinstance(payload, dict) and isinstance(payload.get("text"), str):
        return str(payload["text"])
    return task.description or task.title


def main() -> None:
    parser = argparse.ArgumentParser(description="An LLM agent: works cks tasks with an OpenAI-compatible model.")
    parser.add_argument("--type", default="summarize", help="the task type it works (default summarize)")
    parser.add_argument("--kind", default="python-llm-agent", help="the process kind it reports as")
    parser.add_argument("--concurrency", type=int, default=4, help="tasks worked at once")
    parser.add_argument("--lease-s", type=float, default=60.0, help="each claim's lease, renewed every third of it")
    parser.add_argument("--system", default=SUMMARIZE, help="the system prompt: what to do with a task's text")
    parser.add_argument("--retries", type=int, default=3, help="how often a 429/503 is asked again within one attempt")
    parser.add_argument("--max-wait-s", type=float, default=30.0,
                        help="the longest Retry-After waited within an attempt; a longer one gives the task back")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    provider = Provider(base_url=os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"),
                        api_key=os.environ.get("OPENAI_API_KEY", ""), model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"),
                        retries=args.retries, max_wait_s=args.max_wait_s)
    worker = Worker(kind=args.kind, concurrency=args.concurrency, lease_s=args.lease_s)

    @worker.task(args.type)
    async def work(task: Task, ctx: TaskContext) -> str:
        text = text_of(task)
        if not text:
            raise PermanentFailure("the task has no text: give it a payload {\"text\": ...}, a description or a title")
        return await provider.chat([{"role": "system", "content": args.system}, {"role": "user", "content": text}])

    worker.run()


if __name__ == "__main__":
    main()
