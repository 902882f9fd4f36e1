-- Versions written when they were numbered by one sequence across all
-- objects (version_id) are numbered 1, 2, 3 … within each object, in
-- version_id order; their parents and the objects' head_version, which held
-- version ids, then hold those numbers. (A version's parents are versions
-- of its own object, and numbers grow with ids within an object, so the
-- parents stay ascending.) Plan has dropped the table's append-only
-- triggers for this, and creates them again afterwards. Both updates read
-- the numbering n, computed once.
WITH n AS (
	SELECT version_id, row_number() OVER (PARTITION BY object_id ORDER BY version_id) AS number
	FROM cks_object_versions),
versions AS (
	UPDATE cks_object_versions v SET version = n.number,
		parents = ARRAY(SELECT p.number FROM n p WHERE p.version_id = ANY(v.parents) ORDER BY p.number)
	FROM n WHERE n.version_id = v.version_id)
UPDATE cks_objects o SET head_version = n.number FROM n WHERE n.version_id = o.head_version
