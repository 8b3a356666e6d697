"""One read, one record: the inputs besides the images that the plan records in a split's
``made_from`` (run/made_from.py) and a job reads again (a label file, a devkit, a val CSV, a class
list file, an ``is_valid_file`` module), checked where rule count_check uses them.

Saved between the plan and the job (an editor, a sync client), such a file would leave a dataset
holding the second file's labels and recording the first's digest, which a rerun with the first
file put back finds up to date. So the job digests the very bytes it parsed
(sources/inputs_read.py) and stops, naming the file, where they are not those the plan recorded;
the same command again records and reads the file as it is then. What count_check has checked is
what write_meta records: the made_from file, rewritten, is newer than the listing, which then runs
again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from imagefolder_lmdb.classes.plan import ClassSource
from imagefolder_lmdb.sources.inputs_read import InputRead
from imagefolder_lmdb.sources.listing_options import ListingOptions, predicate_file

#: What follows the file's name.
CHANGED = "changed while converting, after this run recorded it: run the same command again"


class ChangedWhileConverting(RuntimeError):
    """An input's content is not what the plan recorded in made_from; the message names it."""


def check_settings_read(recipe: dict[str, Any], classes: ClassSource, options: ListingOptions) -> None:
    """Before the listing: stop where the class list the job was given (``classes``: its params, made
    from the file as Snakemake read it) or the predicate it imports (``options``) differs from the
    plan's ``recipe``. The predicate is imported here, and the listing uses that import."""
    changed = changed_class_list(recipe, classes) + changed_predicate(recipe, options)
    if changed:
        raise ChangedWhileConverting(f"{changed[0]} {CHANGED}")


def check_files_read(recipe: dict[str, Any], inputs: Sequence[InputRead]) -> None:
    """After the listing: stop where a file it parsed (``inputs``) is not the one the plan recorded."""
    changed = changed_files(recipe, inputs)
    if changed:
        raise ChangedWhileConverting(f"{changed[0]} {CHANGED}")


def changed_files(recipe: dict[str, Any], inputs: Sequence[InputRead]) -> list[str]:
    """The files parsed whose digest is not the one recorded for that path (``labels``: each file by
    real path and digest; one the plan found missing has the digest "missing")."""
    recorded = {entry[0]: entry[1] for entry in (recipe.get("labels") or {}).values()}
    return [read.path for read in inputs if read.path in recorded and recorded[read.path] != read.digest]


def changed_class_list(recipe: dict[str, Any], classes: ClassSource) -> list[str]:
    """The class list given by name (a file's, a dataset's), when not the names recorded."""
    recorded = (recipe.get("classes") or {}).get("names")
    if classes.names is None or recorded is None or sorted(classes.names) == recorded:
        return []
    return [f"the class list {classes.listed_in}" if classes.listed_in else "the class list"]


def changed_predicate(recipe: dict[str, Any], options: ListingOptions) -> list[str]:
    """``is_valid_file``, imported by this job, when its source is not the one recorded."""
    if options.is_valid_file is None or options.recipe().get("listing") == recipe.get("listing"):
        return []
    where = predicate_file(options.is_valid_file)
    return [f"is_valid_file {options.is_valid_file}" + (f" ({where})" if where else "")]
