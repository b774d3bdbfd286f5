// params: $memory, $ids, $embeddings
UNWIND $ids AS id
MATCH (n:MemoryNode {memory: $memory, id: id})
RETURN n.id AS id, n.level AS level, n.kind AS kind, n.doc_id AS doc_id,
       n.position AS position, n.text AS text, n.props AS props,
       CASE WHEN $embeddings THEN n.vector_f32 ELSE null END AS vector_f32
