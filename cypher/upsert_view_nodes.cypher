// Adapter view nodes (ReadAgent/GAM pages, GAM memos, MemAgent memory states), each
// with its links to the level-0 chunks it covers or read, in order (r.ord), and to its
// document. row.label (Page, Memo, MemoryState) and row.link (COVERS, READ) come from a
// fixed table in the store, never from user input; row.fields are the view's own scalar
// fields copied onto the node so Browser shows them (row.props keeps them as JSON).
// params: $memory, $rows
UNWIND $rows AS row
MERGE (v:ViewNode {memory: $memory, id: row.id})
SET v.view = row.view, v.kind = row.kind, v.grp = row.grp, v.seq = row.seq,
    v.doc_id = row.doc_id, v.text = row.text, v.props = row.props,
    v.vector_f32 = row.vector_f32
SET v += row.fields
SET v:$(row.label)
WITH v, row
CALL (v) {
  MATCH (v)-[old:COVERS|READ]->()
  DELETE old
}
CALL (v, row) {
  UNWIND range(0, size(row.chunk_ids) - 1) AS i
  MATCH (c:Chunk {memory: $memory, id: row.chunk_ids[i]})
  MERGE (v)-[r:$(row.link)]->(c)
  SET r.ord = i
}
CALL (v, row) {
  MATCH (d:Document {memory: $memory, id: row.doc_id})
  MERGE (d)-[:HAS_VIEW_NODE]->(v)
}
