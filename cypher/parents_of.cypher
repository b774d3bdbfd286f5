// params: $memory, $ids
UNWIND $ids AS id
MATCH (m:MemoryNode {memory: $memory, id: id})<-[:SUMMARIZES]-(s:MemoryNode)
RETURN m.id AS member_id, s.id AS summary_id
