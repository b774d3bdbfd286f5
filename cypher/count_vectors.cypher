// How many nodes (of all memories) the vector index of one embedding size holds.
// {vector_label} is put in by the store, checked by vector_label() (as in schema.cypher):
// a label written in the query is counted from Neo4j's count store in about 3 ms at 10^5
// nodes, where a label given as a parameter ($($label)) scanned them all (150 ms).
// params: none
MATCH (n:{vector_label})
RETURN count(n) AS count
