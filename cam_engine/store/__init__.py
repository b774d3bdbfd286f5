"""Memory stores: one interface (``GraphStore``), an embedded SQLite default and Neo4j."""

from cam_engine.store.base import DocumentRecord, GraphStore, open_store

__all__ = ["DocumentRecord", "GraphStore", "open_store"]
