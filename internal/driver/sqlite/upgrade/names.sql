-- The indexes and triggers of the database: (type, name).
SELECT type, name FROM sqlite_master WHERE type IN ('index', 'trigger')
