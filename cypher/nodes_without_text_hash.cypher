// Up to $limit nodes of the memory without a text_hash: [id, text] each.
// params: $memory, $limit
MATCH (n:MemoryNode {memory: $memory})
WHERE n.text_hash IS NULL
WITH n LIMIT $limit
RETURN collect([n.id, n.text]) AS rows
