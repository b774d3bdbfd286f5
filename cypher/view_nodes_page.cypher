// A page of the memory's view nodes of every view (cam export): at most $limit whose ids
// sort after $after, by id, each with its vector and the ids of the chunks it covers or
// read, in order. One record (see Neo4jStore._rows).
// params: $memory, $after, $limit
MATCH (v:ViewNode {memory: $memory})
WHERE v.id > $after
// Ordered by both properties of the (memory, id) constraint's index: the index gives
// that order, so a page reads $limit nodes, not every node after $after.
WITH v ORDER BY v.memory, v.id LIMIT $limit
CALL (v) {
  OPTIONAL MATCH (v)-[r:COVERS|READ]->(c:Chunk)
  WITH r, c ORDER BY r.ord
  RETURN collect(c.id) AS chunk_ids
}
RETURN collect([v.id, v.view, v.kind, v.grp, v.seq, v.doc_id, v.text, v.props,
                v.vector_f32, chunk_ids]) AS rows
