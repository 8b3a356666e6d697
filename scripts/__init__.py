"""scripts/ as the package ``imagefolder_lmdb._scripts`` of a pip installation (pyproject.toml; an
editable ``pip install -e .`` needs this file to find it). The rules and the commands never import
through it: they run with this folder on ``sys.path`` and import each other by top-level names."""
