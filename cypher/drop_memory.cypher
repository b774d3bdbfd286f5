// The whole memory deleted in transactions of bounded size, one statement per label
// (each runs in an auto-commit transaction, which CALL ... IN TRANSACTIONS needs): what
// removes an import that failed halfway, however large. The :Memory node (its settings)
// goes last, so a memory is listed until nothing else of it is left.
// params: $memory
MATCH (x:Replica {memory: $memory})
CALL (x) { DETACH DELETE x } IN TRANSACTIONS OF 5000 ROWS;
MATCH (x:ViewNode {memory: $memory})
CALL (x) { DETACH DELETE x } IN TRANSACTIONS OF 5000 ROWS;
MATCH (x:MemoryNode {memory: $memory})
CALL (x) { DETACH DELETE x } IN TRANSACTIONS OF 1000 ROWS;
MATCH (x:Name {memory: $memory})
CALL (x) { DETACH DELETE x } IN TRANSACTIONS OF 5000 ROWS;
MATCH (x:Document {memory: $memory})
CALL (x) { DETACH DELETE x } IN TRANSACTIONS OF 5000 ROWS;
MATCH (x:Counter {memory: $memory})
CALL (x) { DETACH DELETE x } IN TRANSACTIONS OF 5000 ROWS;
MATCH (m:Memory {name: $memory})
DETACH DELETE m
