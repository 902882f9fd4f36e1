-- The primary keys of the current schema's tables: (table, its columns in
-- key order, joined by commas).
SELECT r.relname::text, string_agg(a.attname::text, ',' ORDER BY k.n)
FROM pg_constraint c
JOIN pg_class r ON r.oid = c.conrelid
CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY AS k(attnum, n)
JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
WHERE c.contype = 'p' AND c.connamespace = current_schema()::regnamespace
GROUP BY r.relname
