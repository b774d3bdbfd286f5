// Whether every node of the memory has its text_hash (a memory written before nodes
// had one gets them filled in once, by the store).
// params: $memory
MATCH (m:Memory {name: $memory})
RETURN coalesce(m.text_hashes, false) AS filled
