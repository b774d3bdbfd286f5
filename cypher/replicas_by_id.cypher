// One record: the rows packed in a list (see Neo4jStore._rows).
// params: $memory, $ids
UNWIND $ids AS id
MATCH (r:Replica {memory: $memory, id: id})
RETURN collect([r.id, r.node_id, r.level, r.label, r.members]) AS rows
