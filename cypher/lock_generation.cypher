// The memory's generation (raised by every committed batch), write-locked until the
// transaction ends: the SET takes the lock before the value is read, so two writers
// cannot both build a batch on the same generation.
// params: $memory
MERGE (c:Counter {memory: $memory, name: 'generation'})
ON CREATE SET c.value = 0
SET c.locked = true
WITH c
RETURN c.value AS value
