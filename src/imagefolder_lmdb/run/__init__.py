"""The controller of a conversion: what the user asked for (one ``ConvertRequest``, request.py), the
plan checked before Snakemake starts (plan.py, existing.py, made_from.py, change.py, places.py), the
lock and ownership of OUTDIR, and Snakemake launched and answered (invocation.py, launch.py). What a
running workflow shows is board/, a layer below."""
