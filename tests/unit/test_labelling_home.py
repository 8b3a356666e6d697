"""A labelling answers for itself, as a kind of source does (issue 62, point 1): no module outside
sources/ names one, its keys travel as one mapping from the config to the listing, and the layout a
split's ``labels`` picks is one of ``LAYOUTS``."""

from __future__ import annotations

import ast
import builtins
import re
from pathlib import Path
from typing import Any

import pytest

from imagefolder_lmdb.sources import SOURCES
from imagefolder_lmdb.sources import layouts as layouts_module
from imagefolder_lmdb.sources.label_keys import EXTRACT_KEYS, PARAM_ORDER
from imagefolder_lmdb.sources.labelling import Labelling
from imagefolder_lmdb.sources.layouts import FOLDER_OR_ARCHIVE, LAYOUTS, Layout, picked_layout
from imagefolder_lmdb.sources.unlabelled import UNLABELLED
from support import REPO
from support.label_trees import write_files, write_images

PACKAGE = REPO / "src" / "imagefolder_lmdb"
#: The modules a labelling's own modules are: only sources/ imports them.
LABELLING_MODULES = ("labelling", "label_checks", "label_keys", "ilsvrc_val", "unlabelled")


def all_subclasses(base: type) -> set[type]:
    found = set(base.__subclasses__())
    return found | {deeper for cls in found for deeper in all_subclasses(cls)}


def outside_sources() -> list[Path]:
    """Every module of the package outside sources/, and the rule files."""
    modules = [path for path in PACKAGE.rglob("*.py") if "sources" not in path.relative_to(PACKAGE).parts]
    return modules + sorted((REPO / "rules").glob("*.smk"))


def naming(pattern: str, paths: list[Path]) -> list[str]:
    """``file:line`` of each line of ``paths`` that ``pattern`` finds."""
    found = re.compile(pattern)
    return [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in paths
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if found.search(line)
    ]


def test_no_module_outside_sources_names_a_labelling_or_asks_a_kind_by_its_class() -> None:
    labellings = sorted(cls.__name__ for cls in all_subclasses(Labelling))
    kinds = sorted(kind.__name__ for kind in SOURCES)
    assert "IlsvrcValLabels" in labellings and "FolderSource" in kinds
    modules = "|".join(LABELLING_MODULES)
    patterns = {
        "imports a labelling's module": rf"sources\.({modules})\b",
        "names a labelling": rf"\b({'|'.join(labellings)})\b",
        "asks a kind by its class": rf"isinstance\([^)]*\b({'|'.join(kinds)})\b",
        "picks a layout outside LAYOUTS": r"LABEL_FILE_LAYOUT",
    }
    found = {what: naming(pattern, outside_sources()) for what, pattern in patterns.items()}
    assert found == {what: [] for what in patterns}


#: What only sources/ names of a label file's and ILSVRC's labellings: their settings' names, and the
#: keys a labelling reads by name (a message may still say them: a string holding more is no key).
LABELLING_OWN_NAMES = frozenset({"METADATA", "LabelsFrom", "labels_member", "LabelSettings"})
LABELLING_OWN_KEYS = frozenset({"devkit", "val_labels", "labels_member"})


def labelling_names(path: Path) -> list[str]:
    """``file:line`` where a module imports sources.label_files, names one of LABELLING_OWN_NAMES, or
    reads one of LABELLING_OWN_KEYS by its name (a string that is just the key)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom):
            names = [node.module or "", *(alias.name for alias in node.names)]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [node.value] if node.value in LABELLING_OWN_KEYS else []
        if any(name in LABELLING_OWN_NAMES | LABELLING_OWN_KEYS or ".label_files" in name for name in names):
            found.append(f"{path.relative_to(REPO)}:{getattr(node, 'lineno', 0)}: {', '.join(names)}")
    return found


def test_no_module_outside_sources_reads_a_labellings_settings_by_name() -> None:
    """The command line's ``--labels`` per split, the words of the labels' origin, the judging of an
    existing dataset against an edited label file, and the keys that are paths: each asked of
    sources/labellings.py, which the labelling answers."""
    modules = [path for path in outside_sources() if path.suffix == ".py"]
    assert [line for path in modules for line in labelling_names(path)] == []


def test_the_rules_path_reads_no_label_key_by_its_name() -> None:
    """The config's checks, the rules' settings and files, and the steps hand a labelling's keys on
    as one mapping (sources/labellings.py), never one by name."""
    keys = "|".join(dict.fromkeys((*PARAM_ORDER, *EXTRACT_KEYS)))
    paths = [
        *sorted((PACKAGE / "config").glob("*.py")),
        *sorted((PACKAGE / "steps").glob("*.py")),
        *sorted((PACKAGE / "work").glob("*.py")),
        *sorted((REPO / "rules").glob("*.smk")),
        PACKAGE / "run" / "made_from.py",
    ]
    paths = [path for path in paths if path.name not in ("settings.py", "flags.py")]  # the command line's words
    lines = naming(rf"""["'.]({keys})\b""", paths)
    assert lines == []


class Captions(Labelling):
    """A way labels are found that only LAYOUTS knows: picked by ``labels: captions``."""

    def picks(self, labels: object) -> bool:
        return labels == "captions"

    def labels_kept(self, labels: object) -> object:
        return None


def test_the_layout_that_labels_pick_is_one_of_layouts(monkeypatch: pytest.MonkeyPatch) -> None:
    assert picked_layout("imagefolder", "labels.csv") == ("label-file", "labels.csv")
    assert picked_layout("imagefolder", UNLABELLED) == ("unlabelled", None)
    assert picked_layout("unlabelled", UNLABELLED) == ("unlabelled", None), "the check runs again"
    assert picked_layout("ilsvrc-val", "labels.csv") == ("ilsvrc-val", "labels.csv"), "the config check refuses it"
    assert picked_layout("label-file", UNLABELLED) == ("label-file", UNLABELLED), "the config check refuses it"
    # the first of LAYOUTS whose labelling picks the value (a label file's takes any path: it comes after)
    added: dict[str, Any] = {"captioned": Layout("captioned", FOLDER_OR_ARCHIVE, Captions()), **LAYOUTS}
    monkeypatch.setattr(layouts_module, "LAYOUTS", added)
    assert picked_layout("imagefolder", "captions") == ("captioned", None)


def test_the_plan_reads_a_label_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The config's check of a label file's columns and its check against the folder's images read
    the same bytes: the file is opened once (before: twice)."""
    from imagefolder_lmdb.config.check import check_config
    from imagefolder_lmdb.config.schema import load_schema

    write_images(tmp_path / "train", ["a.jpg", "b.jpg"])
    write_files(tmp_path, {"train.csv": "file_name,label\na.jpg,cat\nb.jpg,dog\n"})
    monkeypatch.chdir(tmp_path)
    schema = load_schema(str(REPO / "config" / "schema.yaml"))
    opened, real_open = [], builtins.open

    def counting_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.extend([file] if str(file).endswith("train.csv") else [])
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    check_config({"splits": {"train": {"source": "train", "labels": "train.csv"}}}, schema)
    assert len(opened) == 1, opened
