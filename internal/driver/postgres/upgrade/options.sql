-- The storage parameters of the current schema's tables: (table, one
-- parameter as "name=value").
SELECT c.relname::text, o.option
FROM pg_class c CROSS JOIN LATERAL unnest(c.reloptions) AS o(option)
WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
