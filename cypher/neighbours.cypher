// params: $memory, $ids
UNWIND $ids AS id
MATCH (n:MemoryNode {memory: $memory, id: id})-[e:SIMILAR|LINKED]-(m:MemoryNode)
RETURN n.id AS id, m.id AS other, e.score AS score
