"""What a file's meta document says beside its index, as the dataset shows it: the words of each class,
the folder its paths lie under, the sizes it was shrunk to (moved out of reader/dataset.py, unchanged)."""

from __future__ import annotations

from typing import Any


def class_words(document: dict[str, Any], classes: list[str]) -> list[str] | None:
    """meta/json's ``class_words``: the words of each class (``"tench, Tinca tinca"`` for
    ``n01440764``), written when every class is an ImageNet-1k WNID; None where the file has none
    (other classes, legacy files, files written before it existed) or they do not fit the classes."""
    words = document.get("class_words")
    if not isinstance(words, list) or len(words) != len(classes) or not all(isinstance(w, str) for w in words):
        return None
    return list(words)


def source_root(document: dict[str, Any]) -> str | None:
    """The folder the records' relative paths lie under, as meta/json's ``source.root`` records
    it; None where unknown: not a folder of the files themselves (archives, trees unpacked into the
    work folder, val images outside ``<wnid>/`` folders), or a file written before it was recorded."""
    source = document.get("source")
    root = source.get("root") if isinstance(source, dict) else None
    return root if isinstance(root, str) else None


def size_setting(document: dict[str, Any], key: str) -> int | None:
    """``short_side`` or ``max_side`` of meta/json's ``settings.encode``: the size the images were
    shrunk to at conversion; None where it was not set, or the file predates the setting."""
    settings = document.get("settings")
    encode = settings.get("encode") if isinstance(settings, dict) else None
    value = encode.get(key) if isinstance(encode, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def resized_words(short_side: int | None, max_side: int | None) -> str | None:
    """How a file's images were shrunk, for ``repr``; None when they keep the source's sizes."""
    bounds = [f"{side} side <= {n}" for side, n in (("shorter", short_side), ("longer", max_side)) if n is not None]
    return ", ".join(bounds) or None
