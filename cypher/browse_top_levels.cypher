// The two highest levels of a memory and the SUMMARIZES links between them.
// params: $memory
MATCH (n:MemoryNode {memory: $memory})
WITH max(n.level) AS top
MATCH (s:Summary {memory: $memory})-[r:SUMMARIZES]->(m:MemoryNode)
WHERE s.level = top
RETURN s, r, m
