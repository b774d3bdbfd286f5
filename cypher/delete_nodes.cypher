// Nodes with their edges, replicas, membership links and mentions of names; a Name
// node no chunk mentions any more goes too.
// params: $memory, $ids
UNWIND $ids AS id
MATCH (n:MemoryNode {memory: $memory, id: id})
CALL (n) {
  MATCH (n)-[m:MENTIONS]->(k:Name)
  DELETE m
  WITH k
  WHERE NOT EXISTS { (k)<-[:MENTIONS]-() }
  DELETE k
}
OPTIONAL MATCH (r:Replica {memory: $memory, node_id: id})
DETACH DELETE r, n
