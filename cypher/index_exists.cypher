// Whether an index of this name exists (indexes are shared by all memories).
// params: $name
SHOW INDEXES YIELD name
WHERE name = $name
RETURN name
