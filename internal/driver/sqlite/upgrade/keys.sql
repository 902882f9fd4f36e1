-- The primary keys of the database's tables: (table, its columns in key
-- order, joined by commas).
SELECT k.name, group_concat(k.col, ',')
FROM (SELECT m.name, p.name AS col FROM sqlite_master m, pragma_table_info(m.name) p
    WHERE m.type = 'table' AND p.pk > 0 ORDER BY m.name, p.pk) k
GROUP BY k.name
