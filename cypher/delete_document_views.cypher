// The adapter views of documents (view nodes whose document or group is one of them),
// with their links: an updated document's pages and memos describe its old text.
// params: $memory, $ids
UNWIND $ids AS id
CALL (id) {
  MATCH (v:ViewNode {memory: $memory})
  WHERE v.doc_id = id OR v.grp = id
  DETACH DELETE v
}
