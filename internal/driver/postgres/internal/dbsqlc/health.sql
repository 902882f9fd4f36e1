-- Storage health: whether the server runs this connection's transactions
-- read-only (a hot standby, or default_transaction_read_only set for the
-- database or the user), where every write fails with SQLSTATE 25006.

-- name: TransactionReadOnly :one
SELECT current_setting('transaction_read_only') = 'on';

-- The server's clock, read as late as the statement runs (cks doctor
-- compares it with the host's: the leases of leadership are judged by it).
-- name: DatabaseNow :one
SELECT clock_timestamp()::timestamptz;
