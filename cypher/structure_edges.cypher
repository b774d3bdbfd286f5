// Every edge of the memory as [src, dst, score]; one record (see Neo4jStore._rows).
// params: $memory
MATCH (a:MemoryNode {memory: $memory})-[e:SIMILAR|LINKED]->(b:MemoryNode)
RETURN collect([a.id, b.id, e.score]) AS rows
