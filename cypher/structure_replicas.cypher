// Every replica of the memory; one record (see Neo4jStore._rows).
// params: $memory
MATCH (r:Replica {memory: $memory})
RETURN collect([r.id, r.node_id, r.level, r.label, r.members]) AS rows
