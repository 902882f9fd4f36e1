-- Usage and spend (issue 43; docs/spend.md): a row of cks_usage per
-- report_usage, and per task with a budget or usage its row of
-- cks_task_spend, written in the transaction that holds the task's row.

-- name: UsageInsert :one
INSERT INTO cks_usage (task_id, attempt, restart, type, concurrency_keys, model,
    input_tokens, output_tokens, cost_nanos, currency, agent, principal, reported_at)
VALUES (@task_id, @attempt, @restart, @type, @concurrency_keys, @model,
    @input_tokens, @output_tokens, @cost_nanos, @currency, @agent, @principal, @reported_at)
RETURNING *;

-- A task's reports, oldest first (idx_usage_task).
-- name: UsageOfTask :many
SELECT * FROM cks_usage WHERE task_id = @task_id AND usage_id > @after
ORDER BY usage_id
LIMIT @limit;

-- The reports before @until after the cursor (@after_at, @after_id), in
-- the order of idx_usage_reported: a window read a page at a time.
-- name: UsagePage :many
SELECT * FROM cks_usage
WHERE (reported_at > @after_at OR (reported_at = @after_at AND usage_id > @after_id))
    AND reported_at < @until
ORDER BY reported_at, usage_id
LIMIT @limit;

-- name: TaskSpendGet :many
SELECT * FROM cks_task_spend WHERE task_id = @task_id;

-- name: TaskSpendPut :exec
INSERT INTO cks_task_spend (task_id, max_tokens, max_cost_nanos, input_tokens, output_tokens, cost_nanos, reports)
VALUES (@task_id, @max_tokens, @max_cost_nanos, @input_tokens, @output_tokens, @cost_nanos, @reports)
ON CONFLICT (task_id) DO UPDATE SET
    max_tokens = excluded.max_tokens,
    max_cost_nanos = excluded.max_cost_nanos,
    input_tokens = excluded.input_tokens,
    output_tokens = excluded.output_tokens,
    cost_nanos = excluded.cost_nanos,
    reports = excluded.reports;

-- The spend of the keys a budget governs, per window (cks_key_spend).

-- name: KeySpendAdd :exec
INSERT INTO cks_key_spend (window_ms, window_start, key, tokens, cost_nanos)
VALUES (@window_ms, @window_start, @key, @tokens, @cost_nanos)
ON CONFLICT (window_ms, window_start, key) DO UPDATE SET
    tokens = cks_key_spend.tokens + excluded.tokens,
    cost_nanos = cks_key_spend.cost_nanos + excluded.cost_nanos;

-- Every key's spend in one window (the primary key's prefix).
-- name: KeySpendIn :many
SELECT * FROM cks_key_spend WHERE window_ms = @window_ms AND window_start = @window_start;

-- name: KeySpendPrune :execrows
DELETE FROM cks_key_spend WHERE window_start < @before;
