// Sets per-memory counters to new values (a batch's label numbers and generation).
// params: $memory, $rows
UNWIND $rows AS row
MERGE (c:Counter {memory: $memory, name: row.name})
SET c.value = row.value
REMOVE c.locked
