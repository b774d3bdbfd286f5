// Every node of the memory has its text_hash (after fill_text_hashes).
// params: $memory
MATCH (m:Memory {name: $memory})
SET m.text_hashes = true
