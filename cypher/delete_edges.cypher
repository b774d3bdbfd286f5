// params: $memory, $pairs
UNWIND $pairs AS pair
MATCH (:MemoryNode {memory: $memory, id: pair[0]})-[e:SIMILAR|LINKED]->(:MemoryNode {memory: $memory, id: pair[1]})
DELETE e
