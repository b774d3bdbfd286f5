// Nodes with their edges, replicas and membership links.
// params: $memory, $ids
UNWIND $ids AS id
MATCH (n:MemoryNode {memory: $memory, id: id})
OPTIONAL MATCH (r:Replica {memory: $memory, node_id: id})
DETACH DELETE r, n
