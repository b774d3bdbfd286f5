// params: $memory
MATCH (v:ViewNode {memory: $memory})
RETURN v.view AS view, v.kind AS kind, count(*) AS nodes
ORDER BY view, kind
