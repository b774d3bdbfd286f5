// Undirected edges stored from the smaller id to the larger; SIMILAR at level 0
// (with the two parts of the composite score), LINKED between summaries.
// params: $memory, $rows
UNWIND $rows AS row
MATCH (a:MemoryNode {memory: $memory, id: row.src})
MATCH (b:MemoryNode {memory: $memory, id: row.dst})
FOREACH (_ IN CASE WHEN row.level = 0 THEN [1] ELSE [] END |
  MERGE (a)-[e:SIMILAR]->(b)
  SET e.score = row.score, e.cosine = row.cosine, e.proximity = row.proximity, e.level = 0)
FOREACH (_ IN CASE WHEN row.level > 0 THEN [1] ELSE [] END |
  MERGE (a)-[e:LINKED]->(b)
  SET e.score = row.score, e.level = row.level)
