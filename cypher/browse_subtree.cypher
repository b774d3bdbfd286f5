// One summary and everything below it, down to the chunks.
// params: $memory, $node
MATCH path = (s:MemoryNode {memory: $memory, id: $node})-[:SUMMARIZES*1..10]->(:MemoryNode)
RETURN path
LIMIT 300
