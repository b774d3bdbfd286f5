// Chunks that belong to two or more clusters (the overlap) and their summaries.
// params: $memory
MATCH (c:Chunk {memory: $memory})<-[:SUMMARIZES]-(s:Summary)
WITH c, collect(s) AS parents
WHERE size(parents) >= 2
RETURN c, parents
LIMIT 25
