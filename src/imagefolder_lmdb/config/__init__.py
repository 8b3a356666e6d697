"""The config: its schema and defaults, every check of it, and each problem worded once (problems.py)."""
