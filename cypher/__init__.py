"""Neo4j queries as parameterized ``.cypher`` files, shipped as package data and
loaded by name by the Neo4j store (installed as ``cam_engine.cypher``)."""
