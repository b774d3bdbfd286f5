// How many nodes (of all memories) the vector index of one embedding size holds.
// params: $vector_label
MATCH (n:$($vector_label))
RETURN count(n) AS count
