// The nodes of some documents (chunks of them, summaries whose doc_id is one of them)
// that no summary of those documents has as a member: where a walk down a scope starts.
// One record: the rows packed in a list (see Neo4jStore._rows).
// params: $memory, $documents, $embeddings
MATCH (n:MemoryNode)
WHERE n.memory = $memory AND n.doc_id IN $documents
  AND NOT EXISTS {
    MATCH (n)<-[:SUMMARIZES]-(p:MemoryNode)
    WHERE p.doc_id IN $documents
  }
WITH n ORDER BY n.level, n.doc_id, n.position, n.id
RETURN collect([n.id, n.level, n.kind, n.doc_id, n.position, n.text, n.props, CASE WHEN $embeddings THEN n.vector_f32 ELSE null END]) AS rows
