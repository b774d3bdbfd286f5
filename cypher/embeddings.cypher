// params: $memory, $ids
UNWIND $ids AS id
MATCH (n:MemoryNode {memory: $memory, id: id})
RETURN n.id AS id, n.vector_f32 AS vector_f32
