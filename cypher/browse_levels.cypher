// Nodes per level (a table, not a graph).
// params: $memory
MATCH (n:MemoryNode {memory: $memory})
RETURN n.level AS level, count(*) AS nodes
ORDER BY level
