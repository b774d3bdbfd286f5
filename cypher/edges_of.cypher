// One record: the rows packed in a list (see Neo4jStore._rows).
// params: $memory, $ids
UNWIND $ids AS id
MATCH (n:MemoryNode {memory: $memory, id: id})-[e:SIMILAR|LINKED]-(:MemoryNode)
WITH DISTINCT e
RETURN collect([startNode(e).id, endNode(e).id, e.level, e.score, e.cosine, e.proximity]) AS rows
