// params: $memory, $level
MATCH (r:Replica {memory: $memory, level: $level})
RETURN count(DISTINCT r.label) AS count
