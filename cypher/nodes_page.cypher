// A page of the memory's nodes (cam export): at most $limit whose ids sort after $after,
// by id, with their float32 vectors when $embeddings. One record (see Neo4jStore._rows).
// params: $memory, $after, $limit, $embeddings
MATCH (n:MemoryNode {memory: $memory})
WHERE n.id > $after
// Ordered by both properties of the (memory, id) constraint's index: the index gives
// that order, so a page reads $limit nodes, not every node after $after.
WITH n ORDER BY n.memory, n.id LIMIT $limit
RETURN collect([n.id, n.level, n.kind, n.doc_id, n.position, n.text, n.props,
                CASE WHEN $embeddings THEN n.vector_f32 ELSE null END]) AS rows
