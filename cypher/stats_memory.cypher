// Memory-wide figures: documents and chunks that belong to 2+ clusters.
// params: $memory
CALL () {
  MATCH (d:Document {memory: $memory}) RETURN count(d) AS documents
}
CALL () {
  MATCH (r:Replica {memory: $memory, level: 0})
  WITH r.node_id AS node, count(DISTINCT r.label) AS clusters
  WHERE clusters >= 2
  RETURN count(node) AS in_two
}
RETURN documents, in_two
