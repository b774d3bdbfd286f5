// The names chunks mention (cam_engine.names): each row's chunk gets a MENTIONS link to
// the Name node of each of its keys, and loses those to keys it no longer has; a Name
// left with no MENTIONS goes.
// params: $memory, $rows
UNWIND $rows AS row
MATCH (c:MemoryNode {memory: $memory, id: row.id})
CALL (c, row) {
  MATCH (c)-[old:MENTIONS]->(k:Name)
  WHERE NOT k.key IN row.names
  DELETE old
  WITH k
  WHERE NOT EXISTS { (k)<-[:MENTIONS]-() }
  DELETE k
}
CALL (c, row) {
  UNWIND row.names AS key
  MERGE (k:Name {memory: $memory, key: key})
  MERGE (c)-[:MENTIONS]->(k)
}
