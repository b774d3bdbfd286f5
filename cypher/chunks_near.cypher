// params: $memory, $doc_id, $positions
UNWIND $positions AS position
MATCH (n:Chunk {memory: $memory, doc_id: $doc_id, position: position})
RETURN n.id AS id, n.level AS level, n.kind AS kind, n.doc_id AS doc_id,
       n.position AS position, n.text AS text, n.props AS props, n.vector_f32 AS vector_f32
