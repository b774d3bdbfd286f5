// The chunks a document's node links to (HAS_CHUNK), which Browser shows under it.
// params: $memory, $doc_id
MATCH (:Document {memory: $memory, id: $doc_id})-[:HAS_CHUNK]->(c:Chunk)
RETURN c.id AS chunk
ORDER BY c.position
