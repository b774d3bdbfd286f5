// params: $memory, $level
MATCH (n:MemoryNode {memory: $memory, level: $level})
RETURN count(n) AS count
