// params: $memory, $level, $embeddings
MATCH (n:MemoryNode {memory: $memory, level: $level})
RETURN n.id AS id, n.level AS level, n.kind AS kind, n.doc_id AS doc_id,
       n.position AS position, n.text AS text, n.props AS props,
       CASE WHEN $embeddings THEN n.vector_f32 ELSE null END AS vector_f32
ORDER BY n.doc_id, n.position, n.id
