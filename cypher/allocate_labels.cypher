// Reserves $count consecutive numbers of a per-memory counter; returns the first.
// params: $memory, $name, $count
MERGE (c:Counter {memory: $memory, name: $name})
ON CREATE SET c.value = 0
WITH c, c.value AS start
SET c.value = start + $count
RETURN start
