// The MENTIONS links of nodes about to be deleted, and the Name nodes they leave with
// none (delete_nodes then takes the nodes themselves).
// params: $memory, $ids
UNWIND $ids AS id
MATCH (:MemoryNode {memory: $memory, id: id})-[m:MENTIONS]->(k:Name)
DELETE m
WITH DISTINCT k
WHERE NOT EXISTS { (k)<-[:MENTIONS]-() }
DELETE k
