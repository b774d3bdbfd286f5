// A document's reading-order links (NEXT) between its chunks, by position: what
// Browser follows, checked against the chunks' positions by the contract tests.
// params: $memory, $doc_id
MATCH (a:Chunk {memory: $memory, doc_id: $doc_id})-[:NEXT]->(b:Chunk)
RETURN a.id AS chunk, b.id AS next
ORDER BY a.position, b.position
