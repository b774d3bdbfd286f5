// Summaries per backend that wrote them ("extractive" or a chat model).
// params: $memory
MATCH (s:Summary {memory: $memory})
RETURN s.backend AS backend, count(s) AS summaries
