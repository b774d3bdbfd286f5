// One record: the rows packed in a list (see Neo4jStore._rows).
// params: $memory, $labels
UNWIND $labels AS label
MATCH (r:Replica {memory: $memory, label: label})
WITH label, count(r) AS size
RETURN collect([label, size]) AS rows
