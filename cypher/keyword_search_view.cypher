// Full-text (Lucene) search over view nodes, kept to one memory, view and kind. The
// index is shared by every memory, so it is asked for more hits than k. $groups (or
// null) keeps it to some sequences, e.g. documents.
// params: $memory, $view, $kind, $query, $candidates, $k, $groups
CALL db.index.fulltext.queryNodes('cam_view_text', $query, {limit: $candidates})
YIELD node, score
WHERE node.memory = $memory AND node.view = $view AND node.kind = $kind
  AND ($groups IS NULL OR node.grp IN $groups)
RETURN node.id AS id, score
ORDER BY score DESC, id
LIMIT $k
