-- SQLite tables have no storage parameters: no rows, so that the plan asks
-- for none (schema.Table.FillFactor is Postgres's).
SELECT '', '' WHERE 0
