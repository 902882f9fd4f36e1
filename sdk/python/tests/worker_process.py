"""A worker in a process of its own, for the tests that need one (kill -9, SIGTERM).

    python3 worker_process.py KIND TYPE [--lease-s S] [--hold]

Runs a Worker of KIND (CKS_URL, CKS_TOKEN) for task type TYPE until it is drained
(SIGTERM, SIGINT or a stop request), then prints "run returned". Its handler returns
at once, or with --hold waits for its attempt's abort.
"""

from __future__ import annotations

import argparse
import logging

from cks import Task, TaskContext, Worker


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind")
    parser.add_argument("type")
    parser.add_argument("--lease-s", type=float, default=6.0)
    parser.add_argument("--hold", action="store_true", help="hold each task until its attempt is aborted")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    worker = Worker(kind=args.kind, lease_s=args.lease_s, liveness_interval_s=1, claim_wait_s=2)

    @worker.task(args.type)
    def handle(task: Task, ctx: TaskContext) -> None:
        if args.hold:
            ctx.aborted.wait()

    worker.run()
    print("run returned", flush=True)


if __name__ == "__main__":
    main()
