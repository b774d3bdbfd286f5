// params: $memory
OPTIONAL MATCH (r:Replica {memory: $memory})
DETACH DELETE r
WITH count(*) AS replicas
OPTIONAL MATCH (n:MemoryNode {memory: $memory})
DETACH DELETE n
WITH count(*) AS nodes
OPTIONAL MATCH (x) WHERE (x:Document OR x:Counter OR x:ViewNode OR x:Name) AND x.memory = $memory
DETACH DELETE x
WITH count(*) AS others
OPTIONAL MATCH (m:Memory {name: $memory})
DELETE m
