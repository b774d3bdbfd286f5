// The hierarchy's shape: nodes without a parent, and nodes repeating another's text
// (all of them, and those in a group of equal texts that holds a summary).
// Each MATCH names every property of an index (IS NOT NULL where any value will do):
// the planner then seeks this memory's entries in it, where {memory: $memory} alone
// scanned every memory's nodes. Texts are compared by their hash, read from the index
// cam_node_text_hash with the level, not from the nodes.
// params: $memory
CALL () {
  MATCH (n:MemoryNode)
  WHERE n.memory = $memory AND n.level IS NOT NULL AND COUNT { (n)<-[:SUMMARIZES]-() } = 0
  RETURN count(n) AS roots
}
CALL () {
  MATCH (n:MemoryNode)
  WHERE n.memory = $memory AND n.text_hash IS NOT NULL AND n.level IS NOT NULL
  WITH n.text_hash AS hash, count(*) AS copies, max(n.level) AS top
  WHERE copies > 1
  RETURN coalesce(sum(copies - 1), 0) AS repeated,
         coalesce(sum(CASE WHEN top > 0 THEN copies - 1 ELSE 0 END), 0) AS repeated_summaries
}
RETURN roots, repeated, repeated_summaries
