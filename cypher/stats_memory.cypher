// Memory-wide figures: documents, chunks that belong to 2+ clusters, and the name graph
// (Name nodes and the MENTIONS links to them). Each MATCH names every property of an
// index, so that the planner seeks this memory's entries (stats_shape.cypher); the
// replicas' node ids and labels come from the index cam_replica_cluster.
// params: $memory
CALL () {
  MATCH (d:Document) WHERE d.memory = $memory AND d.id IS NOT NULL
  RETURN count(d) AS documents
}
CALL () {
  MATCH (r:Replica)
  WHERE r.memory = $memory AND r.level = 0 AND r.label IS NOT NULL AND r.node_id IS NOT NULL
  WITH r.node_id AS node, count(DISTINCT r.label) AS clusters
  WHERE clusters >= 2
  RETURN count(node) AS in_two
}
CALL () {
  MATCH (k:Name) WHERE k.memory = $memory AND k.key IS NOT NULL
  RETURN count(k) AS names, sum(COUNT { (k)<-[:MENTIONS]-() }) AS mentions
}
RETURN documents, in_two, names, mentions
