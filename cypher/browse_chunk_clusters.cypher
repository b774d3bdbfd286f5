// The clusters a chunk belongs to: its summaries one level up (one per cluster its
// replicas joined), the replicas themselves, and the other members of those clusters.
// params: $memory, $node
MATCH (c:MemoryNode {memory: $memory, id: $node})
OPTIONAL MATCH (r:Replica)-[:REPLICA_OF]->(c)
OPTIONAL MATCH (s:Summary)-[:SUMMARIZES]->(c)
OPTIONAL MATCH (s)-[:SUMMARIZES]->(other:MemoryNode)
RETURN c, r, s, other
