-- Serialises schema steps on one schema: CREATE TABLE IF NOT EXISTS is not
-- safe under concurrency in Postgres (the loser fails on the catalog's
-- unique index). The key is the first backends' (store/postgres), so old
-- and new code opening one database at once take turns too.
SELECT pg_advisory_xact_lock(hashtextextended('cks.schema:' || $1::text, 0))
