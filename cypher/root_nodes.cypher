// Nodes no summary has as a member: what the covering top level groups.
// One record: the rows packed in a list (see Neo4jStore._rows).
// params: $memory, $embeddings
MATCH (n:MemoryNode {memory: $memory})
WHERE NOT (n)<-[:SUMMARIZES]-(:MemoryNode)
WITH n ORDER BY n.level, n.doc_id, n.position, n.id
RETURN collect([n.id, n.level, n.kind, n.doc_id, n.position, n.text, n.props, CASE WHEN $embeddings THEN n.vector_f32 ELSE null END]) AS rows
