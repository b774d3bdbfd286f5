// params: $memory
MATCH (n:MemoryNode {memory: $memory})
RETURN DISTINCT n.level AS level
ORDER BY level
