-- The columns of every table of the database: (table, column).
SELECT m.name, c.name
FROM sqlite_master m, pragma_table_info(m.name) c
WHERE m.type = 'table'
