// Candidates for a top-k by cosine from the vector index, restricted to one memory
// and, when $level is not null, one level. The index is shared by all memories, so it
// is asked for $candidates hits and filtered; the caller re-scores the survivors
// exactly (the index scores in single precision, (1 + cos) / 2).
// params: $vector_index, $memory, $level, $vectors, $candidates
UNWIND range(0, size($vectors) - 1) AS row
CALL (row) {
  CALL db.index.vector.queryNodes($vector_index, $candidates, $vectors[row])
  YIELD node
  WITH node
  WHERE node.memory = $memory AND ($level IS NULL OR node.level = $level)
  RETURN collect(node.id) AS ids
}
RETURN row, ids
ORDER BY row
