// Per-level counts of one memory.
// params: $memory
MATCH (n:MemoryNode {memory: $memory})
WITH n.level AS level, count(n) AS nodes
OPTIONAL MATCH (a:MemoryNode {memory: $memory, level: level})-[e:SIMILAR|LINKED]->()
WITH level, nodes, count(e) AS edges
OPTIONAL MATCH (r:Replica {memory: $memory, level: level})
RETURN level, nodes, edges, count(r) AS replicas, count(DISTINCT r.label) AS clusters
ORDER BY level
