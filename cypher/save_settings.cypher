// params: $memory, $settings
MERGE (m:Memory {name: $memory})
// A new memory's nodes are written with their text_hash: none to fill in (stats).
ON CREATE SET m.created_at = datetime(), m.text_hashes = true
SET m.settings = $settings
