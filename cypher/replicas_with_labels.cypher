// One record: the rows packed in a list (see Neo4jStore._rows).
// params: $memory, $labels
UNWIND $labels AS label
MATCH (r:Replica {memory: $memory, label: label})
WITH r ORDER BY r.id
RETURN collect([r.id, r.node_id, r.level, r.label, r.members]) AS rows
