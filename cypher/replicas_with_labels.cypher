// params: $memory, $labels
UNWIND $labels AS label
MATCH (r:Replica {memory: $memory, label: label})
RETURN r.id AS id, r.node_id AS node_id, r.level AS level, r.label AS label, r.members AS members
ORDER BY id
