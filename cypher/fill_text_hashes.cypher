// The text_hash of nodes that have none. A node a writer wrote meanwhile has its own
// (written with its text) and is left as it is.
// params: $memory, $rows
UNWIND $rows AS row
MATCH (n:MemoryNode {memory: $memory, id: row.id})
WHERE n.text_hash IS NULL
SET n.text_hash = row.text_hash
