"""Benchmarks: engine, pipeline, topics, soak, projection and closed loop."""
