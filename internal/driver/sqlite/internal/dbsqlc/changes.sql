-- The per-topic change counters behind Notify and the Listener.

-- name: ChangeBump :exec
INSERT INTO cks_changes (topic, seq) VALUES (@topic, 1)
ON CONFLICT (topic) DO UPDATE SET seq = seq + 1;

-- name: ChangeList :many
SELECT topic, seq FROM cks_changes;
