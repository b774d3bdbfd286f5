// Clusters per (level, number of distinct member nodes): the shape of each level.
// Every property of the index cam_replica_cluster named: a seek of this memory's
// entries (stats_shape.cypher).
// params: $memory
MATCH (r:Replica)
WHERE r.memory = $memory AND r.level IS NOT NULL AND r.label IS NOT NULL
  AND r.node_id IS NOT NULL
WITH r.level AS level, r.label AS label, count(DISTINCT r.node_id) AS size
RETURN level, size, count(*) AS clusters
ORDER BY level, size
