// Full-text (Lucene) search over the nodes of some documents only (a scope), of one
// level when $level is not null. The index is shared by every memory and document and
// cannot be filtered before its limit, so it is asked for every hit and the scope is
// kept before the top $k are cut: the k are the scope's best, not the survivors of
// everyone's. $query holds only word characters joined by spaces (Lucene's OR).
// params: $memory, $documents, $level, $query, $k
CALL db.index.fulltext.queryNodes('cam_node_text', $query)
YIELD node, score
WHERE node.memory = $memory AND node.doc_id IN $documents
  AND ($level IS NULL OR node.level = $level)
RETURN node.id AS id, score
ORDER BY score DESC, id
LIMIT $k
