// Candidates for a top-k by cosine among the nodes of some documents only (a scope):
// chunks of them and summaries whose doc_id is one of them (all their chunks theirs),
// of one level when $level is not null. The shared vector index cannot be filtered
// before its top-k cut, so the scope is searched exactly: its nodes are found by
// (memory, doc_id) and scored here; the caller re-scores the best from vector_f32,
// as for `nearest`, so both paths rank alike.
// params: $memory, $documents, $level, $vectors, $k
MATCH (n:MemoryNode)
WHERE n.memory = $memory AND n.doc_id IN $documents
  AND ($level IS NULL OR n.level = $level) AND n.embedding IS NOT NULL
WITH collect(n) AS scope
UNWIND range(0, size($vectors) - 1) AS row
CALL (row, scope) {
  UNWIND scope AS n
  WITH n, vector.similarity.cosine(n.embedding, $vectors[row]) AS score
  ORDER BY score DESC, n.id
  LIMIT $k
  RETURN collect(n) AS found
}
WITH collect([row, [n IN found | n.id]]) AS rows, collect(found) AS groups
CALL (groups) {
  UNWIND groups AS found
  UNWIND found AS n
  WITH DISTINCT n
  RETURN collect([n.id, n.vector_f32]) AS vectors
}
RETURN rows, vectors
