// Every membership link as [summary id, member id]; one record (see Neo4jStore._rows).
// params: $memory
MATCH (s:MemoryNode {memory: $memory})-[:SUMMARIZES]->(m:MemoryNode)
RETURN collect([s.id, m.id]) AS rows
