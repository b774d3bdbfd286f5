// params: $memory, $rows, $vector_label
UNWIND $rows AS row
MERGE (n:MemoryNode {memory: $memory, id: row.id})
SET n:Summary, n.level = row.level, n.kind = row.kind, n.doc_id = row.doc_id,
    n.position = row.position, n.text = row.text, n.text_hash = row.text_hash,
    n.embedding = row.embedding,
    n.vector_f32 = row.vector_f32, n.props = row.props, n.backend = row.backend
SET n:$($vector_label)
