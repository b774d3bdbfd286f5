// params: $memory, $id, $source, $sha256, $chunks, $total, $text_sha256, $version, $updated_at
MERGE (d:Document {memory: $memory, id: $id})
SET d.source = $source, d.sha256 = $sha256, d.chunks = $chunks, d.total = $total,
    d.text_sha256 = $text_sha256, d.version = $version, d.updated_at = $updated_at
