// One view's nodes of one kind (optionally one group), in sequence order, with the ids
// of the chunks each covers or read, in order.
// params: $memory, $view, $kind, $grp, $embeddings
MATCH (v:ViewNode {memory: $memory, view: $view, kind: $kind})
WHERE $grp IS NULL OR v.grp = $grp
CALL (v) {
  OPTIONAL MATCH (v)-[r:COVERS|READ]->(c:Chunk)
  WITH r, c ORDER BY r.ord
  RETURN collect(c.id) AS chunk_ids
}
RETURN v.id AS id, v.view AS view, v.kind AS kind, v.grp AS grp, v.seq AS seq,
       v.doc_id AS doc_id, v.text AS text, v.props AS props,
       CASE WHEN $embeddings THEN v.vector_f32 ELSE null END AS vector_f32, chunk_ids
ORDER BY grp, seq
