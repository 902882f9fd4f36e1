-- The schema the search_path names (NULL when none of its entries exists).
SELECT current_schema()
