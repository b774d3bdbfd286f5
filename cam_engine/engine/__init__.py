"""The incremental memory builder: one batch of chunks through every level."""
