// A replica is one role of a node (ego-splitting); its label is its cluster.
// params: $memory, $rows
UNWIND $rows AS row
MERGE (r:Replica {memory: $memory, id: row.id})
SET r.node_id = row.node_id, r.level = row.level, r.label = row.label, r.members = row.members
WITH r, row
MATCH (n:MemoryNode {memory: $memory, id: row.node_id})
MERGE (r)-[:REPLICA_OF]->(n)
