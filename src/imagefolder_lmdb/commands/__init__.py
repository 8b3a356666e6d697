"""The ``imagefolder-lmdb`` commands besides ``convert`` and ``verify``, each a ``main(argv, prog)`` that
cli.py runs: ``info`` (what a dataset or OUTDIR holds), ``init_config`` (a shipped, commented config),
``convert_legacy`` (folder2lmdb pickle LMDBs to imagefolder-lmdb v1), ``add_locations`` (record where each
record lies; its library: writing/record_locations.py). scripts/add_locations.py and
scripts/convert_legacy.py run two of them inside a checkout."""
