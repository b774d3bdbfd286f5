// The nodes a question activated, with the edges among them and their parents.
// params: $memory, $nodes
MATCH (n:MemoryNode {memory: $memory})
WHERE n.id IN $nodes
OPTIONAL MATCH (n)-[e:SIMILAR|LINKED|NEXT]-(m:MemoryNode)
WHERE m.id IN $nodes
OPTIONAL MATCH (p:Summary)-[:SUMMARIZES]->(n)
RETURN n, e, m, p
