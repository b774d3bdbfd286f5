// params: $memory, $ids
UNWIND $ids AS id
MATCH (s:MemoryNode {memory: $memory, id: id})-[:SUMMARIZES]->(m:MemoryNode)
RETURN s.id AS summary_id, m.id AS member_id
