// One record: the rows packed in a list (see Neo4jStore._rows).
// params: $memory, $ids
UNWIND $ids AS id
MATCH (n:MemoryNode {memory: $memory, id: id})-[e:SIMILAR|LINKED]-(m:MemoryNode)
RETURN collect([n.id, m.id, e.score]) AS rows
