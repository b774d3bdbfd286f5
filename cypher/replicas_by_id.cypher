// params: $memory, $ids
UNWIND $ids AS id
MATCH (r:Replica {memory: $memory, id: id})
RETURN r.id AS id, r.node_id AS node_id, r.level AS level, r.label AS label, r.members AS members
