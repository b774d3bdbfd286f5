"""Neo4j queries as parameterized ``.cypher`` files, shipped as package data and
loaded by name (installed as ``cam_engine.cypher``; the Neo4j store is issue 3)."""
