// Documents' records and the adapter views of them (view nodes whose document or
// group is one of them), with their links. Their chunks go by delete_nodes.
// params: $memory, $ids
UNWIND $ids AS id
CALL (id) {
  MATCH (v:ViewNode {memory: $memory})
  WHERE v.doc_id = id OR v.grp = id
  DETACH DELETE v
}
CALL (id) {
  MATCH (d:Document {memory: $memory, id: id})
  DETACH DELETE d
}
