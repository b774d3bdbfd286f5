// Clusters per (level, number of distinct member nodes): the shape of each level.
// params: $memory
MATCH (r:Replica {memory: $memory})
WITH r.level AS level, r.label AS label, count(DISTINCT r.node_id) AS size
RETURN level, size, count(*) AS clusters
ORDER BY level, size
