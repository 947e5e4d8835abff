"""The command-line tools: benchmarks, demo, offline inference, engine builds, bags."""
