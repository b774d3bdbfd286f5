// params: $memory
MATCH (d:Document {memory: $memory})
RETURN d.id AS id, d.source AS source, d.sha256 AS sha256, d.chunks AS chunks, d.total AS total,
       d.text_sha256 AS text_sha256,
       coalesce(d.version, 1) AS version, d.updated_at AS updated_at
ORDER BY d.id
