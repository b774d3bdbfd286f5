// Saved queries for Neo4j Browser: paste one query (without the // lines) into the
// editor, or add it to Favorites with the star. Each uses Browser parameters:
//
//   :param memory => 'sabotage'
//   :param node => 's2-31'
//
// $memory is the memory name (`cam ingest ... --memory NAME`); $node is a node id
// (a summary such as 's2-31' or a chunk such as 'c54-761213e8f981': `cam show` and
// `cam browse --node` print them). Load cypher/browser/style.grass first (README.md).
//
// The screenshot docs/images/neo4j-browser.png shows the memory 'sabotage' (the Simple
// Sabotage Field Manual, pg26184.txt) after
//
//   :param memory => 'sabotage'
//   :param node => 's2-31'
//
// and this query: the level-2 summary s2-31, the three level-1 summaries it summarizes
// (s1-71, s1-74, s1-76), their six chunks (positions 51-56), and the three replicas of
// chunk 54, which belongs to all three clusters (replica labels 0.71, 0.74, 0.76).
// Browser's "Connect result nodes" setting (on by default) adds the NEXT, SIMILAR and
// LINKED edges between them. The nodes were then dragged into layers (s2-31 on top,
// level 1, chunks in reading order, replicas at the bottom) in the fullscreen frame.
//
//   MATCH p = (s:Summary {memory: $memory, id: $node})-[:SUMMARIZES*1..2]->(m:MemoryNode)
//   OPTIONAL MATCH q = (m)<-[:REPLICA_OF]-(:Replica)
//   WHERE m.level = 0 AND COUNT { (m)<-[:SUMMARIZES]-() } >= 2
//   RETURN p, q


// 1. The top two levels of a memory and the SUMMARIZES links between them.
// params: $memory
MATCH (n:MemoryNode {memory: $memory})
WITH max(n.level) AS top
MATCH p = (s:Summary {memory: $memory, level: top})-[:SUMMARIZES]->(:MemoryNode)
RETURN p;


// 2. One summary's subtree: every SUMMARIZES path from it down to the chunks (level 0).
// params: $memory, $node (a summary id, e.g. 's2-31')
MATCH p = (s:Summary {memory: $memory, id: $node})-[:SUMMARIZES*1..]->(:Chunk)
RETURN p
LIMIT 500;


// 3a. The clusters a chunk belongs to, as a graph: its parents one level up (one per
// cluster) and its replicas (one per role; the caption is the cluster label).
// params: $memory, $node (a chunk id, e.g. 'c54-761213e8f981')
MATCH (c:Chunk {memory: $memory, id: $node})
OPTIONAL MATCH up = (c)<-[:SUMMARIZES]-(:Summary)
OPTIONAL MATCH rep = (c)<-[:REPLICA_OF]-(:Replica)
RETURN c, collect(DISTINCT up) AS parents, collect(DISTINCT rep) AS replicas;


// 3b. The same as a table: one row per replica of the chunk, with its cluster label,
// the other members of the cluster and the summary that summarizes that cluster.
// params: $memory, $node (a chunk id)
MATCH (c:Chunk {memory: $memory, id: $node})<-[:REPLICA_OF]-(r:Replica)
OPTIONAL MATCH (s:Summary)-[:SUMMARIZES]->(c)
WHERE all(id IN r.members WHERE EXISTS {
  (s)-[:SUMMARIZES]->(:MemoryNode {memory: $memory, id: id})
})
RETURN r.id AS replica, r.label AS cluster, r.members AS with_members,
       collect(s.id) AS summary
ORDER BY replica;


// 4. The chunks around one chunk: two steps either way along NEXT (reading order)
// and its SIMILAR neighbours (the score combines cosine and proximity).
// params: $memory, $node (a chunk id)
MATCH (c:Chunk {memory: $memory, id: $node})
OPTIONAL MATCH seq = (c)-[:NEXT*1..2]-(:Chunk)
OPTIONAL MATCH sim = (c)-[:SIMILAR]-(:Chunk)
RETURN c, collect(DISTINCT seq) AS reading_order, collect(DISTINCT sim) AS similar;


// 5. Counts per level: nodes, SIMILAR/LINKED edges, replicas, clusters, and the nodes
// that belong to two or more clusters (two or more SUMMARIZES parents).
// params: $memory
MATCH (n:MemoryNode {memory: $memory})
WITH n.level AS level, count(n) AS nodes,
     sum(CASE WHEN COUNT { (n)<-[:SUMMARIZES]-() } >= 2 THEN 1 ELSE 0 END) AS in_two_plus
CALL (level) {
  OPTIONAL MATCH (:MemoryNode {memory: $memory, level: level})-[e:SIMILAR|LINKED]->()
  RETURN count(e) AS edges
}
CALL (level) {
  OPTIONAL MATCH (r:Replica {memory: $memory, level: level})
  RETURN count(r) AS replicas, count(DISTINCT r.label) AS clusters
}
RETURN level, nodes, edges, replicas, clusters, in_two_plus
ORDER BY level;


// 6. Chunks that belong to two or more clusters (good values for $node in 3 and 4).
// params: $memory
MATCH (c:Chunk {memory: $memory})<-[:SUMMARIZES]-(s:Summary)
WITH c, collect(s.id) AS parents
WHERE size(parents) >= 2
RETURN c.id AS chunk, c.position AS position, parents, left(c.text, 80) AS text
ORDER BY size(parents) DESC, position;


// 7. Adapter views: ReadAgent pages (or GAM pages: view 'gam') of one document, in
// order, with the chunks each covers. `cam ingest --view readagent` builds them.
// params: $memory
MATCH (d:Document {memory: $memory})-[:HAS_VIEW_NODE]->(p:Page {view: 'readagent'})
WITH d, p ORDER BY p.seq
WITH d, collect(p)[0..6] AS pages
UNWIND pages AS p
MATCH cover = (p)-[:COVERS]->(:Chunk)
OPTIONAL MATCH next = (p)-[:NEXT]->(:Page)
RETURN d, collect(cover) AS covers, collect(next) AS order;


// 8. A MemAgent run (`cam ask --strategy memagent`): memory states step by step, the
// chunks each step read, and the final state holding the answer.
// params: $memory
MATCH (s:MemoryState {memory: $memory})
WITH s.question_id AS run, max(s.step) AS steps
ORDER BY steps DESC LIMIT 1
MATCH (s:MemoryState {memory: $memory, question_id: run})
OPTIONAL MATCH read = (s)-[:READ]->(:Chunk)
RETURN s.step AS step, s.final AS final, s.tokens AS tokens, left(s.text, 120) AS memory,
       count(read) AS chunks_read
ORDER BY step;


// 9. The name graph around one chunk: the names it mentions (Name nodes, caption: the
// name's key) and up to 10 other chunks mentioning each of them. A name that more than
// 20 chunks mention (a main character) is shown without its chunks: it links nearly
// everything, and retrieval does not spread relevance through it either.
// params: $memory, $node (a chunk id, e.g. 'c54-761213e8f981')
MATCH p = (c:Chunk {memory: $memory, id: $node})-[:MENTIONS]->(k:Name)
OPTIONAL MATCH q = (k)<-[:MENTIONS]-(other:Chunk)
WHERE other <> c AND COUNT { (k)<-[:MENTIONS]-() } <= 20
RETURN p, collect(q)[0..10] AS shared;


// 10. The chunks that mention one name, and the other names two or more of them share:
// the name's neighbourhood in the name graph.
// params: $memory, $name (a name key: lowercase, e.g. 'queequeg'; query 11 lists them)
MATCH p = (k:Name {memory: $memory, key: $name})<-[:MENTIONS]-(c:Chunk)
WITH k, collect(p)[0..25] AS paths, collect(c)[0..25] AS chunks
UNWIND chunks AS c
OPTIONAL MATCH q = (c)-[:MENTIONS]->(other:Name)
WHERE other <> k AND COUNT { (other)<-[:MENTIONS]-(x:Chunk) WHERE x IN chunks } >= 2
RETURN paths, collect(q) AS shared;


// 11. The names of a memory by how many chunks mention them (a table): a name in a
// handful of chunks bridges them; one in hundreds is everywhere.
// params: $memory
MATCH (k:Name {memory: $memory})
WITH k, COUNT { (k)<-[:MENTIONS]-() } AS chunks
RETURN k.key AS name, chunks
ORDER BY chunks DESC, name
LIMIT 50;
