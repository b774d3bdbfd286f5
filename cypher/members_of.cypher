// One record: the rows packed in a list (see Neo4jStore._rows).
// params: $memory, $ids
UNWIND $ids AS id
MATCH (s:MemoryNode {memory: $memory, id: id})-[:SUMMARIZES]->(m:MemoryNode)
RETURN collect([s.id, m.id]) AS rows
