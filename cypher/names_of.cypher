// The name keys each chunk mentions. One record: the rows packed in a list (see
// Neo4jStore._rows).
// params: $memory, $ids
UNWIND $ids AS id
MATCH (c:MemoryNode {memory: $memory, id: id})-[:MENTIONS]->(k:Name)
RETURN collect([c.id, k.key]) AS rows
