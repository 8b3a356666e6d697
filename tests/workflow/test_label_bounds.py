"""A label file's values bounded by what a dataset stores, through the real command (issue 57,
findings 3 and 6): a label that is an id (5,000,000,000) stops in one line under a memory limit
where it stopped the machine; a label-file split converted alone stops, as class folders do, where
OUTDIR's class list lacks its labels; and a dataset an earlier commit made of CSV labels written as
floats is made again by the next run, every other one staying up to date."""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

import pytest

from imagefolder_lmdb import LMDBDataset
from support import BIN
from support.label_trees import write_files, write_images
from support.workflow import workflow_at

#: The address space a conversion is given: a label must cost what its file costs, not what its value
#: names (today's main reached 23.9 GB resident on a 4-image JSONL file).
MEMORY_LIMIT = 3 << 30
#: The last commit before label files were bounded: its datasets are what users hold.
BEFORE_BOUNDS = "2163e450f83b5d09e4d12dde7e1a5a54e7561ceb"


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def convert(
    source: Path, out: Path, split: str, *options: str, package: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``imagefolder-lmdb convert SOURCE OUT --split SPLIT OPTIONS`` under the memory limit (with the
    package of ``package``, an earlier commit's src folder, when given)."""
    command = [str(BIN / "imagefolder-lmdb"), "convert", str(source), str(out), "--split", split, "--cores", "1"]
    environment = dict(os.environ) if package is None else {**os.environ, "PYTHONPATH": str(package)}
    return subprocess.run(
        [*command, *options],
        capture_output=True,
        text=True,
        check=False,
        cwd=out.parent,
        env=environment,
        preexec_fn=limited,
    )


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The only line a refused conversion writes: no traceback, nothing on stdout."""
    assert done.returncode == 1, (done.stdout + done.stderr)[-3000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and not done.stdout.strip(), done.stderr[-3000:]
    return lines[0]


#: Rows whose label is an id: (file, rows, the start of the line the conversion stops with).
ID_LABELS = [
    (
        "ids.jsonl",
        ['{"file_name": "0.jpg", "label": 1}', '{"file_name": "1.jpg", "label": 5000000000}'],
        "ids.jsonl line 2: the label 5000000000 ('label') is beyond the largest class index a dataset stores",
    ),
    (
        "ids.csv",
        ["file_name,label", "0.jpg,1", "1.jpg,99999999"],
        "ids.csv line 3: the label 99999999 ('label') would make 100,000,000 classes (0 .. 99999999), more",
    ),
    (
        "ids.jsonl",
        ['{"file_name": "0.jpg", "label": [1]}', '{"file_name": "1.jpg", "label": [1, 3000000000]}'],
        "ids.jsonl line 2: the label 3000000000 ('label') is beyond the largest class index",
    ),
    (
        "ids.csv",
        ["file_name,label", "0.jpg,1", "1.jpg,2000000"],
        "ids.csv line 3: the label 2000000 ('label') would make 2,000,001 classes",
    ),
]


@pytest.mark.parametrize(("name", "rows", "expected"), ID_LABELS, ids=["jsonl-5e9", "csv-1e8", "list-3e9", "csv-2e6"])
def test_a_label_that_is_an_id_stops_in_one_line_under_a_memory_limit(
    tmp_path: Path, name: str, rows: list[str], expected: str
) -> None:
    write_images(tmp_path / "train", ["0.jpg", "1.jpg"])
    write_files(tmp_path, {name: "\n".join(rows) + "\n"})
    line = one_line(convert(tmp_path / "train", tmp_path / "out", "train", "--labels", str(tmp_path / name)))
    start = f"imagefolder-lmdb convert: --labels {tmp_path / name} (split train): {tmp_path / expected}"
    assert line.startswith(start), line
    assert "give --label-column the column of labels" in line  # the command line's flag (issue 59)
    assert "classes:" in line if "would make" in expected else "int32" in line
    assert not (tmp_path / "out" / "train.lmdb").exists()


def test_csv_labels_written_as_floats_convert_as_class_indices(tmp_path: Path) -> None:
    write_images(tmp_path / "train", ["0.jpg", "1.jpg", "2.jpg", "3.jpg"])
    write_files(tmp_path, {"train.csv": "file_name,label\n0.jpg,0.0\n1.jpg,10.0\n2.jpg,2.0\n3.jpg,2\n"})
    done = convert(tmp_path / "train", tmp_path / "out", "train", "--labels", str(tmp_path / "train.csv"))
    assert done.returncode == 0, done.stderr[-3000:]
    dataset = LMDBDataset(str(tmp_path / "out" / "train.lmdb"))
    assert dataset.classes == [str(index) for index in range(11)] and dataset.targets == [0, 10, 2, 2]


def test_a_label_file_split_alone_stops_where_outdirs_class_list_lacks_its_labels(tmp_path: Path) -> None:
    """As a class folder the other splits lack does: the images of label ``bird`` were set aside
    with exit 0; the fix is named, and --classes-from asks for exactly that."""
    write_images(tmp_path / "train", ["0.jpg", "1.jpg"])
    write_images(tmp_path / "val", ["0.jpg", "1.jpg", "2.jpg"])
    train, val = "0.jpg,cat\n1.jpg,dog\n", "0.jpg,cat\n1.jpg,bird\n2.jpg,dog\n"
    write_files(tmp_path, {"train.csv": "file_name,label\n" + train, "val.csv": "file_name,label\n" + val})
    out = tmp_path / "out"
    assert convert(tmp_path / "train", out, "train", "--labels", str(tmp_path / "train.csv")).returncode == 0
    line = one_line(convert(tmp_path / "val", out, "val", "--labels", str(tmp_path / "val.csv")))
    assert line == (
        f"imagefolder-lmdb convert: val: label bird is not a class of {out / 'train.lmdb'} "
        f"(in {tmp_path / 'val.csv'}), "
        "whose numbering this split must share: convert every split in one command (a config giving each split "
        "its labels), or give --classes-from FILE.lmdb to use its list (the images of other labels set aside)"
    )
    assert not (out / "val.lmdb").exists()
    write_images(tmp_path / "hf", ["0.jpg", "1.jpg"])  # Hugging Face's metadata files: the same rule
    write_files(tmp_path / "hf", {"metadata.csv": "file_name,label\n0.jpg,cat\n1.jpg,zebra\n"})
    line = one_line(convert(tmp_path / "hf", out, "val", "--labels", "metadata"))
    assert line.startswith(
        f"imagefolder-lmdb convert: val: label zebra is not a class of {out / 'train.lmdb'} (in its metadata files)"
    )
    asked = ["--labels", str(tmp_path / "val.csv"), "--classes-from", str(out / "train.lmdb")]
    assert convert(tmp_path / "val", out, "val", *asked).returncode == 0
    val = LMDBDataset(str(out / "val.lmdb"))
    assert val.classes == ["cat", "dog"] and [path for path, _ in val.samples] == ["0.jpg", "2.jpg"]


@pytest.mark.slow  # an earlier commit's conversions run first
def test_a_dataset_of_float_csv_labels_made_before_is_made_again_and_no_other(tmp_path: Path) -> None:
    """The label rule in made_from: only a dataset whose label file the new rule reads otherwise is
    made again, saying why; one of integer labels (and one of names) stays up to date."""
    before = workflow_at(BEFORE_BOUNDS, tmp_path / "before")
    if before is None:
        pytest.skip(f"commit {BEFORE_BOUNDS[:10]} is not in this clone's history")
    write_images(tmp_path / "train", ["0.jpg", "1.jpg", "2.jpg"])
    files = {"floats": "0.jpg,0.0\n1.jpg,10.0\n2.jpg,2.0\n", "ints": "0.jpg,0\n1.jpg,10\n2.jpg,2\n"}
    files["names"] = "0.jpg,cat\n1.jpg,dog\n2.jpg,2.0\n"
    write_files(tmp_path, {f"{name}.csv": "file_name,label\n" + rows for name, rows in files.items()})
    made = {}
    for name in files:
        labels = ["--labels", str(tmp_path / f"{name}.csv")]
        old = convert(tmp_path / "train", tmp_path / name, "train", *labels, package=before.parent / "src")
        assert old.returncode == 0, old.stderr[-3000:]
        made[name] = (tmp_path / name / "train.lmdb").read_bytes()
    assert LMDBDataset(str(tmp_path / "floats" / "train.lmdb")).classes == ["0.0", "10.0", "2.0"], "names, before"
    again = {
        name: convert(tmp_path / "train", tmp_path / name, "train", "--labels", str(tmp_path / f"{name}.csv"))
        for name in files
    }
    assert all(done.returncode == 0 for done in again.values()), {k: v.stderr[-2000:] for k, v in again.items()}
    said = again["floats"].stdout + again["floats"].stderr
    assert (
        "train: made again: its labels are read by label rule 2: the labels of "
        f"{tmp_path / 'floats.csv'} are numbers, written as floats too ('0.0', '10.0', '2.0')"
    ) in said, said[-3000:]
    assert LMDBDataset(str(tmp_path / "floats" / "train.lmdb")).targets == [0, 10, 2]
    for name in ("ints", "names"):
        assert "Nothing to convert" in again[name].stdout + again[name].stderr, again[name].stderr[-3000:]
        assert (tmp_path / name / "train.lmdb").read_bytes() == made[name], name
    settled = convert(tmp_path / "train", tmp_path / "floats", "train", "--labels", str(tmp_path / "floats.csv"))
    assert "Nothing to convert" in settled.stdout + settled.stderr, "the rule is recorded: read once"
