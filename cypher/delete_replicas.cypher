// params: $memory, $ids
UNWIND $ids AS id
MATCH (r:Replica {memory: $memory, id: id})
DETACH DELETE r
