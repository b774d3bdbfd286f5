// Level-0 nodes, linked to their document and to the previous chunk (NEXT) for browsing.
// `embedding` (a float list) feeds the vector index; `vector_f32` holds the same vector
// as float32 bytes, which the driver reads back ~100x faster than a list of floats.
// `text_hash` (hex) keys the text for stats' count of repeated texts.
// params: $memory, $rows, $vector_label
UNWIND $rows AS row
MERGE (n:MemoryNode {memory: $memory, id: row.id})
SET n:Chunk, n.level = 0, n.kind = row.kind, n.doc_id = row.doc_id,
    n.position = row.position, n.text = row.text, n.text_hash = row.text_hash,
    n.embedding = row.embedding,
    n.vector_f32 = row.vector_f32, n.props = row.props
SET n:$($vector_label)
WITH n, row
// In a subquery: a chunk whose document record is not written yet keeps its row (and
// gets its NEXT links below).
CALL (n, row) {
  MATCH (d:Document {memory: $memory, id: row.doc_id})
  MERGE (d)-[:HAS_CHUNK]->(n)
}
// A chunk written again may have moved (an updated document): its reading-order
// links are made again from the positions as they are now.
CALL (n) {
  MATCH (n)-[old:NEXT]-()
  DELETE old
}
WITH n, row
OPTIONAL MATCH (prev:Chunk {memory: $memory, doc_id: row.doc_id, position: row.position - 1})
FOREACH (p IN CASE WHEN prev IS NULL THEN [] ELSE [prev] END | MERGE (p)-[:NEXT]->(n))
WITH n, row
OPTIONAL MATCH (next:Chunk {memory: $memory, doc_id: row.doc_id, position: row.position + 1})
FOREACH (x IN CASE WHEN next IS NULL THEN [] ELSE [next] END | MERGE (n)-[:NEXT]->(x))
