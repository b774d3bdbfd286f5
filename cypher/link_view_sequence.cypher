// [:NEXT] between consecutive view nodes of each sequence (same view, kind and group,
// ordered by seq), rebuilt for the sequences a write touched.
// params: $memory, $groups
UNWIND $groups AS g
MATCH (v:ViewNode {memory: $memory, view: g.view, kind: g.kind, grp: g.grp})
CALL (v) {
  MATCH (v)-[old:NEXT]->(:ViewNode)
  DELETE old
}
WITH g, v ORDER BY v.seq
WITH g, collect(v) AS chain
UNWIND range(0, size(chain) - 2) AS i
WITH chain[i] AS a, chain[i + 1] AS b
MERGE (a)-[:NEXT]->(b)
