// params: $memory, $ids
UNWIND $ids AS id
MATCH (n:MemoryNode {memory: $memory, id: id})-[e:SIMILAR|LINKED]-(:MemoryNode)
WITH DISTINCT e
RETURN startNode(e).id AS src, endNode(e).id AS dst, e.level AS level, e.score AS score,
       e.cosine AS cosine, e.proximity AS proximity
