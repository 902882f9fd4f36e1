#!/usr/bin/env python3
"""A cks worker in Python's standard library alone: the HTTP executor API.

    python3 worker.py --type T [--url URL] [--token TOKEN] [--lease-s 30]
                      [--work-s 5] [--heartbeat-s 1] [--save-lease FILE]
    python3 worker.py --resume FILE      # a copy that finishes from a saved lease

It works one task of type T by the protocol (docs/mcp.md, "The worker protocol";
the same operations as the MCP tools of the same names):

  1. claim_tasks   POST /v1/tasks/claim     {worker, types, n, lease_s, running}
                   -> the task, its revision and its lease_token (shown once);
                   running: true claims it straight into RUNNING, so the
                   worker makes no mark_running call (POST /v1/tasks/ID/running)
  2. record_decision POST /v1/tasks/ID/decisions {kind, text, derived_from_revision}
     touch_task    POST /v1/tasks/ID/touch   (the heartbeat, every --heartbeat-s,
                   well within a third of the lease) while the work runs;
                   {"held": false, "abort_requested": true} after an operator's
                   stop: the worker stops working and confirms the abort
                   (POST /v1/tasks/ID/abort/confirm)
  3. complete_task POST /v1/tasks/ID/complete {result}

Every call after the claim carries the lease_token: a call under a lease the
hub no longer holds is refused (409 lease_lost) and changes nothing. With
--resume the worker skips the claim and completes under a lease saved by
--save-lease, as a stale copy of a worker (a process paused, partitioned, or
restarted from old state) would: after a stop and start the hub refuses it.

URL and token: --url/--token, else CKS_URL/CKS_TOKEN. The token needs read and
append on /tasks (cks token create --grant read:/tasks --grant append:/tasks).

Exit status: 0 completed (or no task to claim), 3 aborted by an operator (abort
confirmed), 4 refused: the lease was lost, 1 any other error.
"""

import argparse
import json
import os
import socket
import sys
import time
import urllib.error
import urllib.request


class Refused(Exception):
    """The hub answered a 4xx: code is its error code (lease_lost, …)."""

    def __init__(self, status, code, message):
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message


class Hub:
    def __init__(self, url, token):
        self.url, self.token = url.rstrip("/"), token

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self.token)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                raw = resp.read()
                return json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                err = json.loads(raw)["error"]
            except (ValueError, KeyError, TypeError):
                err = {"code": "http_%d" % e.code, "message": raw.decode(errors="replace")}
            raise Refused(e.code, err.get("code", ""), err.get("message", "")) from None


def log(*args):
    print("python-worker:", *args, file=sys.stderr, flush=True)


def leased(hub, lease, path, body=None):
    """A call under the lease: task_id and lease_token added to the body."""
    b = {"lease_token": lease["lease_token"]}
    b.update(body or {})
    return hub.call("POST", "/v1/tasks/%d%s" % (lease["task_id"], path), b)


def work(hub, args):
    """Claims one task and works it; returns the exit status."""
    worker = "python-worker@%s/%d" % (socket.gethostname(), os.getpid())
    claim = hub.call("POST", "/v1/tasks/claim",
                     {"worker": worker, "types": [args.type], "n": 1, "lease_s": args.lease_s, "running": True})
    if not claim["tasks"]:
        log("no OPEN task of type", args.type)
        return 0
    task = claim["tasks"][0]
    lease = {"task_id": task["task_id"], "lease_token": task["lease_token"], "revision": task["revision"]}
    log("claimed task %d at revision %d" % (lease["task_id"], lease["revision"]))
    if args.save_lease:
        with open(args.save_lease, "w") as f:
            json.dump(lease, f)
    # The plan is derived from the task as claimed: its revision says which text.
    leased(hub, lease, "/decisions", {
        "kind": "plan",
        "text": "work %r as its revision %d states it" % (task.get("title") or task["type"], lease["revision"]),
        "derived_from_revision": lease["revision"],
    })
    deadline = time.monotonic() + args.work_s
    while time.monotonic() < deadline:
        time.sleep(min(args.heartbeat_s, max(0.0, deadline - time.monotonic())))
        beat = leased(hub, lease, "/touch")
        if beat.get("abort_requested"):
            log("abort requested: stopping the work and confirming")
            leased(hub, lease, "/abort/confirm")
            return 3
        if not beat.get("held"):
            log("lease lost: stopping without completing")
            return 4
    return complete(hub, lease)


def complete(hub, lease):
    done = leased(hub, lease, "/complete", {"result": "done by %d at revision %d" % (os.getpid(), lease["revision"])})
    log("completed task %d: %s" % (done["task_id"], done["state"]))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--url", default=os.environ.get("CKS_URL"))
    p.add_argument("--token", default=os.environ.get("CKS_TOKEN"))
    p.add_argument("--type", help="the task type to claim")
    p.add_argument("--lease-s", type=float, default=30.0)
    p.add_argument("--work-s", type=float, default=5.0, help="how long the work takes")
    p.add_argument("--heartbeat-s", type=float, default=1.0)
    p.add_argument("--save-lease", metavar="FILE", help="write the claim's task_id, lease_token, revision here")
    p.add_argument("--resume", metavar="FILE", help="complete under the lease saved in FILE, without a claim")
    args = p.parse_args()
    if not args.url or not args.token:
        p.error("no hub: pass --url and --token or set CKS_URL and CKS_TOKEN")
    if not args.resume and not args.type:
        p.error("--type is required (or --resume FILE)")
    hub = Hub(args.url, args.token)
    try:
        if args.resume:
            try:
                with open(args.resume) as f:
                    lease = json.load(f)
            except (OSError, ValueError) as e:
                log("cannot read the saved lease:", e)
                return 1
            return complete(hub, lease)
        return work(hub, args)
    except Refused as e:
        log("refused:", e)
        return 4 if e.code == "lease_lost" else 1
    except (urllib.error.URLError, OSError) as e:
        log("hub unreachable:", e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
