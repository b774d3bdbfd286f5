// Approximate top-k by cosine from the vector index, restricted to one memory and,
// when $level is not null, one level. The index is shared by all memories, so it is
// asked for $candidates hits and filtered. Neo4j scores cosine as (1 + cos) / 2,
// in single precision: scores are good to about 1e-3.
// params: $vector_index, $memory, $level, $vectors, $candidates, $k
UNWIND range(0, size($vectors) - 1) AS row
CALL (row) {
  CALL db.index.vector.queryNodes($vector_index, $candidates, $vectors[row])
  YIELD node, score
  WITH node, score
  WHERE node.memory = $memory AND ($level IS NULL OR node.level = $level)
  RETURN node.id AS id, 2 * score - 1 AS cosine
  ORDER BY cosine DESC, id
  LIMIT $k
}
RETURN row, collect([id, cosine]) AS hits
ORDER BY row
