// One record: the rows packed in a list (see Neo4jStore._rows).
// params: $memory, $doc_id, $positions
UNWIND $positions AS position
MATCH (n:Chunk {memory: $memory, doc_id: $doc_id, position: position})
RETURN collect([n.id, n.level, n.kind, n.doc_id, n.position, n.text, n.props, n.vector_f32]) AS rows
