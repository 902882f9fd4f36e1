-- Storage health: whether the server runs this connection's transactions
-- read-only (a hot standby, or default_transaction_read_only set for the
-- database or the user), where every write fails with SQLSTATE 25006.

-- name: TransactionReadOnly :one
SELECT current_setting('transaction_read_only') = 'on';
