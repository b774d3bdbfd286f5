// The chunks' float32 vectors as [id, bytes]; one record (see Neo4jStore._rows).
// params: $memory
MATCH (n:Chunk {memory: $memory})
RETURN collect([n.id, n.vector_f32]) AS rows
