-- The columns of every table of the current schema: (table, column).
SELECT table_name::text, column_name::text FROM information_schema.columns
WHERE table_schema = current_schema()
