// One record: the rows packed in a list (see Neo4jStore._rows).
// params: $memory
MATCH (c:Counter {memory: $memory})
RETURN collect([c.name, c.value]) AS rows
