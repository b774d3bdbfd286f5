// One record: the rows packed in a list (see Neo4jStore._rows).
// params: $memory, $ids
UNWIND $ids AS id
MATCH (m:MemoryNode {memory: $memory, id: id})<-[:SUMMARIZES]-(s:MemoryNode)
RETURN collect([m.id, s.id]) AS rows
