// Kept chunks of an updated document at their new place: position, text (its white
// space) and offsets (props). Their vectors stay. A chunk whose position changed gets
// its reading-order links (NEXT) made again from the positions as they are now.
// params: $memory, $rows
UNWIND $rows AS row
MATCH (n:MemoryNode {memory: $memory, id: row.id})
WITH n, row, n.position <> row.position AS shifted
SET n.position = row.position, n.props = row.props
// The text only where it differs (white space): a write re-indexes it for full text.
FOREACH (_ IN CASE WHEN n.text <> row.text THEN [1] ELSE [] END |
  SET n.text = row.text, n.text_hash = row.text_hash)
WITH n, shifted
WHERE shifted
CALL (n) {
  MATCH (n)-[old:NEXT]-()
  DELETE old
}
WITH n
OPTIONAL MATCH (prev:Chunk {memory: $memory, doc_id: n.doc_id, position: n.position - 1})
FOREACH (p IN CASE WHEN prev IS NULL THEN [] ELSE [prev] END | MERGE (p)-[:NEXT]->(n))
WITH n
OPTIONAL MATCH (next:Chunk {memory: $memory, doc_id: n.doc_id, position: n.position + 1})
FOREACH (x IN CASE WHEN next IS NULL THEN [] ELSE [next] END | MERGE (n)-[:NEXT]->(x))
