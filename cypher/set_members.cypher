// Replaces the SUMMARIZES links (one per member) of several summaries.
// params: $memory, $rows
UNWIND $rows AS row
MATCH (s:MemoryNode {memory: $memory, id: row.summary_id})
OPTIONAL MATCH (s)-[old:SUMMARIZES]->()
DELETE old
WITH DISTINCT s, row
UNWIND row.members AS member_id
MATCH (m:MemoryNode {memory: $memory, id: member_id})
MERGE (s)-[:SUMMARIZES]->(m)
