"""The trees the views' tests convert (issue 61), all in one snakemake run: two folder trees and two
multi-label label-file trees, and the trees each view must equal (their union, their class subsets),
as files on disk, so that each view is compared with a real conversion of the matching tree."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from .images import jpeg_bytes, png_bytes
from .label_trees import write_files, write_images
from .workflow import run_snakemake, write_config

#: Folder trees: ``dog`` in both (their images interleave in walk order), ``ant`` and ``zebra`` in B only.
FOLDER_A = ["cat/0.jpg", "cat/1.jpg", "dog/0.jpg", "dog/1.jpg", "dog/sub/s.jpg", "owl/0.jpg"]
FOLDER_B = ["ant/a.jpg", "dog/0a.jpg", "dog/z/q.jpg", "zebra/z.jpg", "zebra/y.jpg"]
#: The subset the folder views take: a class of A only, one of both, one of B only.
FOLDER_SUBSET = ["dog", "owl", "zebra"]
#: Multi-label trees, labels in a CSV beside them (``file_name,label``, labels cut at spaces).
LABELS_A = {"a/i0.jpg": "red green", "c/i2.jpg": "gray", "a/i1.jpg": "blue red", "e/i4.jpg": "green"}
LABELS_B = {"b/j0.jpg": "gray blue", "d/j1.jpg": "red", "f/j2.jpg": "violet"}
#: The subset the label views take (the converter's ``classes:``, every label-file split shares it).
LABEL_SUBSET = ["blue", "red"]


def folder_tree(root: Path, paths: list[str], first_seed: int = 0) -> Path:
    """Real JPEGs (PNGs by suffix) at ``paths`` under ``root``, each of its own pixels from ``first_seed``
    on (two trees with other seeds share no image: a test may tell images by their bytes)."""
    for seed, path in enumerate(paths, first_seed):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(png_bytes(seed) if path.endswith(".png") else jpeg_bytes(seed, (24, 16)))
    return root


def union_tree(root: Path, trees: list[Path], classes: list[str] | None = None) -> Path:
    """The trees copied into one (only ``classes``' folders where given)."""
    for tree in trees:
        for entry in tree.rglob("*"):
            relative = entry.relative_to(tree)
            if entry.is_file() and (classes is None or relative.parts[0] in classes):
                (root / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(entry, root / relative)
    return root


def label_tree(root: Path, labels: dict[str, str], images: list[Path] | None = None) -> tuple[Path, Path]:
    """Images at the keys of ``labels`` (copied from ``images`` where given) and a CSV labelling them;
    returns (the images' folder, the CSV)."""
    folder = root / "images"
    if images is None:
        write_images(folder, list(labels))
    else:
        union_tree(folder, images)
    rows = "".join(f"{path},{words}\n" for path, words in labels.items())
    write_files(root, {"labels.csv": "file_name,label\n" + rows})
    return folder, root / "labels.csv"


def build(folder: Path) -> dict[str, Path]:
    """Every tree, converted in one run under ``folder``; returns each split's file."""
    a = folder_tree(folder / "a", FOLDER_A)
    b = folder_tree(folder / "b", [path.replace(".jpg", ".png") if "zebra" in path else path for path in FOLDER_B], 50)
    ab = union_tree(folder / "ab", [a, b])
    m_a, labels_a = label_tree(folder / "m_a", LABELS_A)
    m_b, labels_b = label_tree(folder / "m_b", LABELS_B)
    m_ab, labels_ab = label_tree(folder / "m_ab", {**LABELS_A, **LABELS_B}, [m_a, m_b])
    own = {"share_classes": False, "shards": 1}
    splits: dict[str, dict[str, Any]] = {
        "a": {"source": str(a), **own},
        "b": {"source": str(b), **own},
        "ab": {"source": str(ab), **own},
        "a_sub": {"source": str(union_tree(folder / "a_sub", [a], FOLDER_SUBSET)), **own},
    }
    multi = {"label_separator": " ", "shards": 1}
    for name, (images, labels) in {"m_a": (m_a, labels_a), "m_b": (m_b, labels_b), "m_ab": (m_ab, labels_ab)}.items():
        splits[name] = {"source": str(images), "labels": str(labels), "share_classes": False, **multi}
    splits["m_a_sub"] = {"source": str(m_a), "labels": str(labels_a), **multi}
    config = write_config(folder, splits, classes=LABEL_SUBSET)
    targets = [f"results/{name}.lmdb" for name in splits]
    run_snakemake(folder, *targets, "--configfile", str(config)).check()
    return {name: folder / "results" / f"{name}.lmdb" for name in splits}
