-- The single-column foreign keys of the current schema's tables:
-- (table.column, constraint name).
SELECT r.relname || '.' || a.attname, c.conname::text
FROM pg_constraint c
JOIN pg_class r ON r.oid = c.conrelid
JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace AND cardinality(c.conkey) = 1
