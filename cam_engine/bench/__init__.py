"""Benchmarks and measurements: scripts that print figures, never timed tests."""
