// params: $memory, $id, $source, $sha256, $chunks, $total
MERGE (d:Document {memory: $memory, id: $id})
SET d.source = $source, d.sha256 = $sha256, d.chunks = $chunks, d.total = $total
