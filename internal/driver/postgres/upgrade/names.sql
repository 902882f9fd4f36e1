-- The indexes and triggers of the current schema: (type, name).
SELECT 'index', indexname::text FROM pg_indexes WHERE schemaname = current_schema()
UNION ALL
SELECT 'trigger', t.tgname::text FROM pg_trigger t
JOIN pg_class c ON c.oid = t.tgrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND NOT t.tgisinternal
