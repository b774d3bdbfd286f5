// params: $memory, $settings
MERGE (m:Memory {name: $memory})
ON CREATE SET m.created_at = datetime()
SET m.settings = $settings
