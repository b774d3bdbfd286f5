// For each name key, the chunks that mention it, when at most $max_chunks do (a
// commoner name bridges nothing). $documents, when not null, is a scope: only chunks
// of those documents, counted within it. Without one, a common name is passed over by
// its degree, before its chunks are read. One record: the rows packed in a list.
// params: $memory, $names, $max_chunks, $documents
UNWIND $names AS key
MATCH (k:Name {memory: $memory, key: key})
WHERE $documents IS NOT NULL OR COUNT { (k)<-[:MENTIONS]-() } <= $max_chunks
CALL (k) {
  MATCH (k)<-[:MENTIONS]-(c:Chunk)
  WHERE $documents IS NULL OR c.doc_id IN $documents
  WITH c
  ORDER BY c.id
  RETURN collect(c.id) AS chunks
}
WITH k, chunks
WHERE 0 < size(chunks) <= $max_chunks
RETURN collect([k.key, chunks]) AS rows
