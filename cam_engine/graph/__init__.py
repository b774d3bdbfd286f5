"""Pure graph algorithms of memory development (no I/O): similarity edges,
ego-splitting, incremental label propagation, cluster splitting."""
