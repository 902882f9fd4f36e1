-- Databases written before lease tokens were stored hashed (issue 12) held
-- the plain token: keep live leases working by storing its SHA-256, hex
-- (what store.HashLeaseToken computes; cks_sha256_hex is the driver's).
UPDATE cks_outbox_tasks SET lease_token_hash = cks_sha256_hex(lease_token)
WHERE lease_token <> ''
