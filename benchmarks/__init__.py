"""replaykit benchmarks: ``python -m benchmarks [--quick]`` from the repository root.

Each contender runs in its own subprocess so that its peak RSS is its own; every figure is
reported as a ratio against a baseline measured in the same run, on the same machine.
Generated data goes to ``./bench-data/`` (git-ignored) and is reused between runs.
"""
