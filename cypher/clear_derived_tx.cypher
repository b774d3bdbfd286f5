// The same as clear_derived, inside an open transaction (a rebuild is one transaction).
// params: $memory
MATCH (r:Replica {memory: $memory})
DETACH DELETE r
WITH count(*) AS replicas
MATCH (c:Counter {memory: $memory})
DELETE c
WITH count(*) AS counters
MATCH (s:Summary {memory: $memory})
DETACH DELETE s
WITH count(*) AS summaries
MATCH (:Chunk {memory: $memory})-[e:SIMILAR]->(:Chunk)
DELETE e
