// Every node of the memory without its vector (store.structure); one record, the rows
// packed in a list (see Neo4jStore._rows).
// params: $memory
MATCH (n:MemoryNode {memory: $memory})
RETURN collect([n.id, n.level, n.kind, n.doc_id, n.position, n.text, n.props, null]) AS rows
