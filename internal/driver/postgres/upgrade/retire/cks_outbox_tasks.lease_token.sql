-- Databases written before lease tokens were stored hashed (issue 12) held
-- the plain token: keep live leases working by storing its SHA-256, hex
-- (what store.HashLeaseToken computes).
UPDATE cks_outbox_tasks SET lease_token_hash = encode(sha256(convert_to(lease_token, 'UTF8')), 'hex')
WHERE lease_token <> ''
