// Candidates for a top-k by cosine from the vector index, restricted to one memory
// and, when $level is not null, one level. The index is shared by all memories, so it
// is asked for $candidates hits (its search weighs that many) and filtered; the best
// $keep of them by the index's score are re-scored exactly by the caller (the index
// scores in single precision, (1 + cos) / 2), from the float32 vectors returned once
// per distinct node (rows of a batch share many candidates).
// params: $vector_index, $memory, $level, $vectors, $candidates, $keep
UNWIND range(0, size($vectors) - 1) AS row
CALL (row) {
  CALL db.index.vector.queryNodes($vector_index, $candidates, $vectors[row])
  YIELD node, score
  WITH node, score
  WHERE node.memory = $memory AND ($level IS NULL OR node.level = $level)
  ORDER BY score DESC
  LIMIT $keep
  RETURN collect(node) AS found
}
WITH collect([row, [n IN found | n.id]]) AS rows, collect(found) AS groups
CALL (groups) {
  UNWIND groups AS found
  UNWIND found AS n
  WITH DISTINCT n
  RETURN collect([n.id, n.vector_f32]) AS vectors
}
RETURN rows, vectors
