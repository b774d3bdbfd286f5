// Memory-wide figures: documents, chunks that belong to 2+ clusters, and the name graph
// (Name nodes and the MENTIONS links to them).
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
CALL () {
  MATCH (k:Name {memory: $memory})
  RETURN count(k) AS names, sum(COUNT { (k)<-[:MENTIONS]-() }) AS mentions
}
RETURN documents, in_two, names, mentions
