-- Versions written when they were numbered by one sequence across all
-- objects (version_id) are numbered 1, 2, 3 … within each object, in
-- version_id order; their parents and the objects' head_version, which held
-- version ids, then hold those numbers. (A version's parents are versions
-- of its own object, and numbers grow with ids within an object, so the
-- parents stay ascending.) Plan has dropped the table's append-only
-- triggers for this, and creates them again afterwards.
UPDATE cks_object_versions SET version = (SELECT count(*) FROM cks_object_versions p
	WHERE p.object_id = cks_object_versions.object_id AND p.version_id <= cks_object_versions.version_id);
UPDATE cks_object_versions SET parents = (SELECT json_group_array(p.version)
	FROM json_each(cks_object_versions.parents) j JOIN cks_object_versions p ON p.version_id = j.value)
WHERE parents <> '[]';
UPDATE cks_objects SET head_version = (SELECT v.version FROM cks_object_versions v
	WHERE v.version_id = cks_objects.head_version) WHERE head_version > 0
