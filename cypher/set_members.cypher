// Replaces a summary's SUMMARIZES links (one per member).
// params: $memory, $summary_id, $members
MATCH (s:MemoryNode {memory: $memory, id: $summary_id})
OPTIONAL MATCH (s)-[old:SUMMARIZES]->()
DELETE old
WITH DISTINCT s
UNWIND $members AS member_id
MATCH (m:MemoryNode {memory: $memory, id: member_id})
MERGE (s)-[:SUMMARIZES]->(m)
