"""The files the rules pass to each other (files.py) and where a listed image's bytes lie in its source
(locations.py)."""
