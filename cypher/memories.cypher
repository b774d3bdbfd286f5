// The names of the memories this database holds (one :Memory node each).
// params: none
MATCH (m:Memory)
RETURN m.name AS name
ORDER BY name
