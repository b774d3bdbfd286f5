// params: $memory
MATCH (m:Memory {name: $memory})
RETURN m.settings AS settings
