-- The single-column foreign keys of the database's tables:
-- (table.column, referenced table).
SELECT m.name || '.' || f."from", f."table"
FROM sqlite_master m, pragma_foreign_key_list(m.name) f
WHERE m.type = 'table' AND f.seq = 0
