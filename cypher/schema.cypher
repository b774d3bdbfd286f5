// Schema, created idempotently. One statement per block; blocks are split on ';'.
// One vector index per embedding size, on a label per size (Vec384, ...): a database
// can hold memories built with different embedders. Index names are parameters; the
// label cannot be one in CREATE INDEX, so {vector_label} is substituted after it is
// checked against a strict identifier pattern.
// params: $vector_index, $dimensions
CREATE CONSTRAINT cam_memory_name IF NOT EXISTS FOR (m:Memory) REQUIRE m.name IS UNIQUE;
CREATE CONSTRAINT cam_node_id IF NOT EXISTS FOR (n:MemoryNode) REQUIRE (n.memory, n.id) IS UNIQUE;
CREATE CONSTRAINT cam_document_id IF NOT EXISTS FOR (d:Document) REQUIRE (d.memory, d.id) IS UNIQUE;
CREATE CONSTRAINT cam_replica_id IF NOT EXISTS FOR (r:Replica) REQUIRE (r.memory, r.id) IS UNIQUE;
CREATE CONSTRAINT cam_counter_name IF NOT EXISTS FOR (c:Counter) REQUIRE (c.memory, c.name) IS UNIQUE;
CREATE CONSTRAINT cam_name_key IF NOT EXISTS FOR (k:Name) REQUIRE (k.memory, k.key) IS UNIQUE;
CREATE INDEX cam_node_level IF NOT EXISTS FOR (n:MemoryNode) ON (n.memory, n.level);
CREATE INDEX cam_node_text_hash IF NOT EXISTS FOR (n:MemoryNode) ON (n.memory, n.text_hash, n.level);
CREATE INDEX cam_node_document IF NOT EXISTS FOR (n:MemoryNode) ON (n.memory, n.doc_id);
CREATE INDEX cam_chunk_position IF NOT EXISTS FOR (n:Chunk) ON (n.memory, n.doc_id, n.position);
CREATE INDEX cam_replica_label IF NOT EXISTS FOR (r:Replica) ON (r.memory, r.label);
CREATE INDEX cam_replica_node IF NOT EXISTS FOR (r:Replica) ON (r.memory, r.node_id);
CREATE INDEX cam_replica_level IF NOT EXISTS FOR (r:Replica) ON (r.memory, r.level);
CREATE INDEX cam_replica_cluster IF NOT EXISTS FOR (r:Replica) ON (r.memory, r.level, r.label, r.node_id);
CREATE FULLTEXT INDEX cam_node_text IF NOT EXISTS FOR (n:MemoryNode) ON EACH [n.text];
CREATE VECTOR INDEX $vector_index IF NOT EXISTS FOR (n:{vector_label}) ON n.embedding
OPTIONS {indexConfig: {`vector.dimensions`: $dimensions, `vector.similarity_function`: 'cosine'}}
;
CREATE CONSTRAINT cam_view_node_id IF NOT EXISTS FOR (v:ViewNode) REQUIRE (v.memory, v.id) IS UNIQUE;
CREATE INDEX cam_view_sequence IF NOT EXISTS FOR (v:ViewNode) ON (v.memory, v.view, v.kind, v.grp, v.seq);
CREATE FULLTEXT INDEX cam_view_text IF NOT EXISTS FOR (v:ViewNode) ON EACH [v.text]
