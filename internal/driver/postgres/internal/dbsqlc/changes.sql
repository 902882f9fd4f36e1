-- Change notification: NOTIFY on the one channel of cks, with the schema in
-- the payload ("<schema>.<topic>"), since NOTIFY is database-wide and
-- several deployments (or test schemas) may share one database.

-- name: ChangeNotify :exec
SELECT pg_notify('cks_changes', current_schema() || '.' || @topic::text);

-- name: CurrentSchema :one
SELECT current_schema()::text;

-- name: ChangeListen :exec
LISTEN cks_changes;
