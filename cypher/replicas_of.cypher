// One record: the rows packed in a list (see Neo4jStore._rows).
// params: $memory, $ids
UNWIND $ids AS id
MATCH (r:Replica {memory: $memory, node_id: id})
WITH r ORDER BY r.id
RETURN collect([r.id, r.node_id, r.level, r.label, r.members]) AS rows
