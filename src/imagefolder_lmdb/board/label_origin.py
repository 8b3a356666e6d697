"""Where a dataset's labels came from, in words, for ``info`` and the end-of-run summary (issue 59),
as the dataset's ``made_from`` recipe recorded them (run/made_from.py); the labelling words them
(sources/labellings.py ``label_origin_words``). A label file moved or copied elsewhere with the same
content is the same file.
"""

from __future__ import annotations

from typing import Any

from imagefolder_lmdb.sources.labellings import label_origin_words, recorded_label_file


def origin_lines(document: dict[str, Any]) -> list[str]:
    """``  labels from: ...`` lines of a dataset's meta document (none where its recipe records no
    label file: class folders, shards, a file made before datasets recorded what they were made from)."""
    made_from = document.get("made_from")
    recipe = made_from.get("recipe") if isinstance(made_from, dict) else None
    labels = recipe.get("labels") if isinstance(recipe, dict) else None
    if not isinstance(labels, dict) or not labels:
        return []
    assert isinstance(recipe, dict)
    return label_origin_words(labels, recipe, document)


def same_contents(recorded: Any, now: Any) -> bool:
    """Whether two recipes' label files (a labelling's ``recipe``, sources/labelling.py: each ``[path, digest]``)
    are the same files by content, wherever they lie: a label file moved or copied elsewhere with the
    same bytes labels the images as before. A file missing (no digest) is never the same."""
    if not isinstance(recorded, dict) or not isinstance(now, dict) or set(recorded) != set(now):
        return False
    return all(
        recorded_label_file(recorded[key])
        and recorded_label_file(now[key])
        and recorded[key][1] == now[key][1] != "missing"
        for key in now
    )
