// params: $memory, $labels
UNWIND $labels AS label
MATCH (r:Replica {memory: $memory, label: label})
RETURN label, count(r) AS size
