// One record: the rows packed in a list (see Neo4jStore._rows).
// params: $memory, $ids, $embeddings
UNWIND $ids AS id
MATCH (n:MemoryNode {memory: $memory, id: id})
RETURN collect([n.id, n.level, n.kind, n.doc_id, n.position, n.text, n.props, CASE WHEN $embeddings THEN n.vector_f32 ELSE null END]) AS rows
