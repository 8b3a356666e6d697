"""One read, one record (issue 57): an input the plan records in ``made_from`` and a job reads again,
saved in between (an editor, a sync client), never leaves a dataset that records one file and holds
the labels of another. Each input is rewritten by the real command's plan's hold point ("planned":
made_from written, Snakemake not started): the run stops with one line naming the file; with the
first file put back, the same command makes the dataset from it, never "Nothing to convert" over the
second file's labels. The inputs: a label file, an ILSVRC2012 devkit and Kaggle's val CSV, a class
list file, an ``is_valid_file`` module.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from imagefolder_lmdb import LMDBDataset
from imagefolder_lmdb.reader.document import read_document
from imagefolder_lmdb.writing.hold_points import HOLD_ENV, HOLD_MARKER_ENV
from support import BIN
from support.ilsvrc import make_devkit
from support.images import make_images
from support.interrupting import StartedCommands
from support.label_trees import write_files, write_images
from support.workflow import snakemake_environment, wait_for_hold

CHANGED = "changed while converting"
LABELS = ["cat", "dog", "cat", "dog", "cat", "dog"]
WNIDS = ["n01440764", "n01443537"]


@dataclass
class Case:
    """A source, the command's options, the input file and its second content (the first: as found)."""

    source: Path
    options: list[str]
    input_file: Path
    second: bytes
    named: str  # what the one line names


def run_command(cwd: Path, command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=snakemake_environment(), capture_output=True, text=True, timeout=600)


def convert(case: Case, out: Path) -> list[str]:
    return [str(BIN / "imagefolder-lmdb"), "convert", str(case.source), str(out), "--cores", "1", *case.options]


def held_while(commands: StartedCommands, cwd: Path, command: list[str], change: Callable[[], None]) -> tuple[int, str]:
    """``command`` with ``change`` made while it is held at "planned"; its exit status and stderr."""
    marker = cwd / "held"
    environment = {**snakemake_environment(), HOLD_ENV: "planned", HOLD_MARKER_ENV: str(marker)}
    process = commands.start(command, cwd=cwd, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_hold(marker, process, timeout=300)  # type: ignore[arg-type]
    change()
    marker.unlink()
    _, stderr = process.communicate(timeout=300)
    return process.returncode, stderr


def label_file_case(base: Path) -> Case:
    """A flat folder and ``train.csv`` (id,label); the second file swaps every label."""
    write_images(base / "train", [f"{n:04d}.jpg" for n in range(len(LABELS))])
    rows = "".join(f"{n:04d},{label}\n" for n, label in enumerate(LABELS))
    swapped = rows.replace("cat", "x").replace("dog", "cat").replace("x", "dog")
    write_files(base, {"train.csv": "id,label\n" + rows})
    second = ("id,label\n" + swapped).encode()
    return Case(
        base / "train",
        ["--split", "train", "--labels", str(base / "train.csv")],
        base / "train.csv",
        second,
        "train.csv",
    )


def val_folder(base: Path) -> Path:
    """Six ILSVRC2012 val images, flat."""
    make_images(str(base / "pool"), images=len(LABELS), classes=1, seed=5, workers=1)
    folder = base / "val"
    folder.mkdir()
    for number, image in enumerate(sorted((base / "pool").rglob("*.*")), start=1):
        image.rename(folder / f"ILSVRC2012_val_{number:08d}.JPEG")
    return folder


def devkit_case(base: Path) -> Case:
    """A val folder labelled by a devkit; the second devkit gives every image the other class."""
    folder, id_to_wnid = val_folder(base), {1: WNIDS[0], 2: WNIDS[1]}
    ids = [1 if label == "cat" else 2 for label in LABELS]
    first, second = base / "ILSVRC2012_devkit_t12.tar.gz", base / "other" / "ILSVRC2012_devkit_t12.tar.gz"
    second.parent.mkdir()
    make_devkit(first, id_to_wnid, ids, base)
    make_devkit(second, id_to_wnid, [3 - i for i in ids], second.parent)
    options = ["--split", "val", "--layout", "ilsvrc-val", "--set", f"splits.val.devkit={first}"]
    return Case(folder, options, first, second.read_bytes(), first.name)


def solution_csv(wnids: list[str]) -> bytes:
    rows = "".join(f"ILSVRC2012_val_{n:08d},{wnid} 1 1 9 9\n" for n, wnid in enumerate(wnids, start=1))
    return ("ImageId,PredictionString\n" + rows).encode()


def val_csv_case(base: Path) -> Case:
    """A val folder labelled by Kaggle's LOC_val_solution.csv; the second swaps the classes."""
    folder, csv = val_folder(base), base / "LOC_val_solution.csv"
    wnids = [WNIDS[0] if label == "cat" else WNIDS[1] for label in LABELS]
    csv.write_bytes(solution_csv(wnids))
    options = ["--split", "val", "--layout", "ilsvrc-val", "--set", f"splits.val.val_labels={csv}"]
    return Case(folder, options, csv, solution_csv(list(reversed(wnids))), csv.name)


def class_list_case(base: Path) -> Case:
    """Three class folders and a class list file of two of them; the second names another two."""
    make_images(str(base / "train"), images=9, classes=3, seed=6, workers=1)
    names = sorted(path.name for path in (base / "train").iterdir())
    listed = base / "classes.txt"
    listed.write_text("\n".join(names[:2]) + "\n")
    second = ("\n".join(names[1:]) + "\n").encode()
    return Case(base / "train", ["--split", "train", "--classes", str(listed)], listed, second, "classes.txt")


def predicate_case(base: Path) -> Case:
    """A class folder tree and an ``is_valid_file`` module beside where the command runs; the second
    module's function takes fewer files."""
    make_images(str(base / "train"), images=6, classes=2, seed=7, workers=1)
    module = base / "work_dir" / "keep_files.py"
    module.parent.mkdir()
    module.write_text("def keep(path):\n    return path.endswith('.JPEG')\n")
    second = b"def keep(path):\n    return path.endswith('.JPEG') and not path.endswith('0.JPEG')\n"
    return Case(
        base / "train", ["--split", "train", "--is-valid-file", "keep_files:keep"], module, second, "keep_files"
    )


CASES = {
    "label-file": label_file_case,
    "devkit": devkit_case,
    "val-csv": val_csv_case,
    "class-list": class_list_case,
    "is-valid-file": predicate_case,
}


@pytest.mark.parametrize("name", list(CASES))
def test_an_input_rewritten_after_the_plan_stops_the_run(name: str, tmp_path: Path, commands: StartedCommands) -> None:
    case = CASES[name](tmp_path)
    cwd = case.input_file.parent if name == "is-valid-file" else tmp_path  # the module beside the command
    first, out = case.input_file.read_bytes(), tmp_path / "out"
    status, stderr = held_while(commands, cwd, convert(case, out), lambda: case.input_file.write_bytes(case.second))
    last = stderr.strip().splitlines()[-1]
    assert status != 0 and CHANGED in last and case.named in last, stderr[-3000:]
    assert "Traceback" not in stderr
    assert not list(out.glob("*.lmdb")), "no dataset from a file that changed under the run"
    case.input_file.write_bytes(first)  # put back: the same command makes the dataset of the first file
    again = run_command(cwd, convert(case, out))
    assert again.returncode == 0 and "Nothing to convert" not in again.stdout + again.stderr, again.stderr[-3000:]
    reference = tmp_path / "reference"
    assert run_command(cwd, convert(case, reference)).returncode == 0
    dataset, expected = LMDBDataset(str(next(out.glob("*.lmdb")))), LMDBDataset(str(next(reference.glob("*.lmdb"))))
    assert (dataset.targets, dataset.classes, dataset.samples) == (expected.targets, expected.classes, expected.samples)


def test_a_label_file_rewritten_after_the_plan_and_kept_makes_its_dataset(
    tmp_path: Path, commands: StartedCommands
) -> None:
    """The second file kept: the same command makes the dataset of its labels, recording its digest."""
    case = label_file_case(tmp_path)
    status, _ = held_while(
        commands, tmp_path, convert(case, tmp_path / "out"), lambda: case.input_file.write_bytes(case.second)
    )
    assert status != 0
    again = run_command(tmp_path, convert(case, tmp_path / "out"))
    assert again.returncode == 0, again.stderr[-3000:]
    document = read_document(str(tmp_path / "out" / "train.lmdb"))
    assert document is not None
    dataset = LMDBDataset(str(tmp_path / "out" / "train.lmdb"))
    swapped = ["dog" if label == "cat" else "cat" for label in LABELS]
    assert [dataset.classes[target] for target in dataset.targets] == swapped
    recorded = json.dumps(document["made_from"]["recipe"]["labels"])
    assert hashlib.sha256(case.second).hexdigest()[:20] in recorded
