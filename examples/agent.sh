#!/bin/sh
# examples/agent.sh: the command of an exec agent, to start from.
#
#   cks dev --exec-types build,lint -- ./examples/agent.sh
#   cks agent exec --types build,lint -- ./examples/agent.sh
#
# It runs once per claimed task: the task as JSON on stdin (without its
# lease token), CKS_TASK_ID, CKS_TASK_TYPE, CKS_TASK_ATTEMPT, CKS_TASK_RESTART
# and CKS_TASK_REVISION in the environment. What it prints is the task's
# result; exit status 0 completes the task, any other fails the attempt
# (retried while attempts remain) with the tail of what it wrote to stderr.
set -eu
task=$(cat)
bytes=$(printf '%s' "$task" | wc -c | tr -d ' ')
echo "$CKS_TASK_TYPE task $CKS_TASK_ID done (attempt $CKS_TASK_ATTEMPT, $bytes bytes of task JSON read)"
