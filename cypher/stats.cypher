// Per-level counts of one memory. The nodes' and the replicas' MATCH name every
// property of an index (cam_node_level, cam_replica_cluster), so that the planner
// seeks this memory's entries and reads the labels from the index (stats_shape.cypher).
// params: $memory
MATCH (n:MemoryNode)
WHERE n.memory = $memory AND n.level IS NOT NULL
WITH n.level AS level, count(n) AS nodes
OPTIONAL MATCH (a:MemoryNode {memory: $memory, level: level})-[e:SIMILAR|LINKED]->()
WITH level, nodes, count(e) AS edges
OPTIONAL MATCH (r:Replica)
  WHERE r.memory = $memory AND r.level = level AND r.label IS NOT NULL
    AND r.node_id IS NOT NULL
RETURN level, nodes, edges, count(r) AS replicas, count(DISTINCT r.label) AS clusters
ORDER BY level
