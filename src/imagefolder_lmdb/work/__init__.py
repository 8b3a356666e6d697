"""Where every file of a run lies (paths.py), the files the rules pass to each other (files.py), where
a listed image's bytes lie in its source (source_locations.py), and a split's meta document as a
conversion judges it (split_document.py)."""
