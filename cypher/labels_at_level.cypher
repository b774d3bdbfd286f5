// params: $memory, $level
MATCH (r:Replica {memory: $memory, level: $level})
RETURN DISTINCT r.label AS label
ORDER BY label
