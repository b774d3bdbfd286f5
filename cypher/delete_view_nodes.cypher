// params: $memory, $view, $kind, $grp
MATCH (v:ViewNode {memory: $memory, view: $view})
WHERE ($kind IS NULL OR v.kind = $kind) AND ($grp IS NULL OR v.grp = $grp)
DETACH DELETE v
RETURN count(*) AS deleted
