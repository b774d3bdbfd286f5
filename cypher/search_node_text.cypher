// Full-text (Lucene) search over memory nodes, kept to one memory and, when $level is
// not null, one level. The index is shared by every memory, so it is asked for more
// hits than k. $query holds only word characters joined by spaces (Lucene's OR).
// params: $memory, $level, $query, $candidates, $k
CALL db.index.fulltext.queryNodes('cam_node_text', $query, {limit: $candidates})
YIELD node, score
WHERE node.memory = $memory AND ($level IS NULL OR node.level = $level)
RETURN node.id AS id, score
ORDER BY score DESC, id
LIMIT $k
