"""``imagefolder-lmdb convert`` as a new user meets it (issue 30): every split of a tree or an archive
in one command with one class list; a split converted alone numbers its classes as the others in
OUTDIR do; nothing in OUTDIR replaced in silence; one conversion at a time into one OUTDIR; settings
without a config file; a rerun with nothing to do shows what is there. The real command, on
generated JPEGs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest
import yaml

from imagefolder_lmdb.reader import META_KEYS
from support.datasets import every_key_and_value
from support.images import make_images
from support.workflow import kill_group, snakemake_environment, wait_for_hold

COMMAND = [sys.executable, "-m", "imagefolder_lmdb.cli"]


def run_in(cwd: Path, *command: str | Path, **environment: str) -> subprocess.CompletedProcess[str]:
    """``command`` in ``cwd`` with the venv's bin first on PATH, as a user runs it."""
    return subprocess.run(
        list(map(str, command)),
        cwd=cwd,
        env={**snakemake_environment(), **environment},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def run_command(cwd: Path, *args: str | Path, **environment: str) -> subprocess.CompletedProcess[str]:
    """``imagefolder-lmdb ARGS`` in ``cwd``."""
    return run_in(cwd, *COMMAND, *args, **environment)


def succeeded(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    return result


@pytest.fixture(scope="module")
def split_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """data/train (3 classes) and data/val lacking train's first class: ImageFolder alone would
    number val's classes 0 and 1, not 1 and 2."""
    data = tmp_path_factory.mktemp("splits") / "data"
    make_images(str(data / "train"), images=9, classes=3, seed=5, workers=1)
    make_images(str(data / "val"), images=9, classes=3, seed=5, first_index=100, workers=1)
    shutil.rmtree(sorted((data / "val").iterdir())[0])
    return data


def meta_of(path: Path) -> tuple[dict, np.ndarray, list[str]]:
    """The meta document, the labels and the relative paths of a dataset."""
    items = every_key_and_value(path)
    labels = np.frombuffer(items[META_KEYS["labels"]], dtype="<i4")
    paths = items[META_KEYS["paths"]].decode().split("\0")[:-1]
    return json.loads(items[META_KEYS["json"]]), labels, paths


def assert_train_numbering(out: Path, train: Path) -> None:
    """Both splits number classes as ImageFolder numbers train's; every val label is its folder's
    index in train's class list."""
    classes = sorted(p.name for p in train.iterdir())
    train_meta, _, _ = meta_of(out / "train.lmdb")
    val_meta, labels, paths = meta_of(out / "val.lmdb")
    assert train_meta["class_to_idx"] == val_meta["class_to_idx"] == {c: i for i, c in enumerate(classes)}
    assert len(paths) == 6 and labels.tolist() == [classes.index(path.split("/")[0]) for path in paths]


def test_every_split_of_a_tree_and_of_its_tar_in_one_command(split_tree: Path, tmp_path: Path) -> None:
    succeeded(run_command(tmp_path, "convert", split_tree, "out", "--shards", "2", "--cores", "2"))
    assert_train_numbering(tmp_path / "out", split_tree / "train")
    archive = tmp_path / "data.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(split_tree, arcname="data")  # one wrapping folder, as archives usually have
    result = succeeded(run_command(tmp_path, "convert", archive, "from-tar", "--shards", "1", "--cores", "2"))
    assert_train_numbering(tmp_path / "from-tar", split_tree / "train")
    assert "val: 6 images" in result.stdout + result.stderr


def test_a_split_alone_takes_the_class_list_of_the_others(split_tree: Path, tmp_path: Path) -> None:
    """The README's two commands into one OUT: the second takes the first's numbering; a split with a
    class the others lack stops, naming it and the flag."""
    succeeded(run_command(tmp_path, "convert", split_tree / "train", "out", "--shards", "1", "--cores", "2"))
    val = succeeded(
        run_command(tmp_path, "convert", split_tree / "val", "out", "--split", "val", "--shards", "1", "--cores", "2")
    )
    assert f"classes: the 3 of {tmp_path / 'out' / 'train.lmdb'}" in val.stderr
    assert_train_numbering(tmp_path / "out", split_tree / "train")
    other = tmp_path / "other"
    shutil.copytree(split_tree / "val", other)
    (other / "zebra").mkdir()
    shutil.copy(next((other / sorted(os.listdir(other))[0]).iterdir()), other / "zebra" / "z.JPEG")
    refused = run_command(tmp_path, "convert", other, "out", "--split", "test")
    assert refused.returncode == 1 and refused.stdout == ""
    lines = refused.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "imagefolder-lmdb convert: test: class folder zebra is not a class of "
    )
    assert "zebra" in refused.stderr and "--classes-from FILE.lmdb" in refused.stderr
    assert not (tmp_path / "out" / "test.lmdb").exists()
    told = ["--split", "test", "--classes-from", tmp_path / "out" / "train.lmdb", "--shards", "1", "--cores", "2"]
    succeeded(run_command(tmp_path, "convert", other, "out", *told))
    test_meta, _, paths = meta_of(tmp_path / "out" / "test.lmdb")
    assert test_meta["classes"] == meta_of(tmp_path / "out" / "train.lmdb")[0]["classes"]
    assert test_meta["class_list"]["images_outside"] == 1 and not any(path.startswith("zebra/") for path in paths)


def test_another_source_is_not_put_in_place_of_a_dataset(tmp_path: Path) -> None:
    make_images(str(tmp_path / "a"), images=6, classes=2, seed=1, workers=1)
    make_images(str(tmp_path / "b"), images=4, classes=2, seed=2, workers=1)
    succeeded(run_command(tmp_path, "convert", "a", "out", "--shards", "1", "--cores", "2"))
    dataset = tmp_path / "out" / "train.lmdb"
    before = dataset.read_bytes()
    refused = run_command(tmp_path, "convert", "b", "out", "--shards", "1", "--cores", "2")
    assert refused.returncode == 1
    assert refused.stderr == (
        f"imagefolder-lmdb convert: {dataset} was made from {tmp_path / 'a'}, not {tmp_path / 'b'}: not replaced. "
        "Give --overwrite to replace it, or another OUTDIR\n"
    )
    assert dataset.read_bytes() == before
    succeeded(run_command(tmp_path, "convert", "b", "out", "--shards", "1", "--cores", "2", "--overwrite"))
    assert meta_of(dataset)[0]["length"] == 4


def test_one_conversion_at_a_time_into_one_outdir(tmp_path: Path) -> None:
    """A second convert into the same OUTDIR with another work folder, and a plain snakemake run of a
    config naming it, are refused while the first runs; the first's dataset stays as it was."""
    make_images(str(tmp_path / "a"), images=6, classes=2, seed=1, workers=1)
    marker = tmp_path / "held"
    first = subprocess.Popen(
        [*COMMAND, "convert", "a", "out", "--shards", "1", "--cores", "2"],
        cwd=tmp_path,
        env={
            **snakemake_environment(),
            "IMAGEFOLDER_LMDB_TEST_HOLD": "verify",
            "IMAGEFOLDER_LMDB_TEST_HOLD_MARKER": str(marker),
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for_hold(marker, first, timeout=300)
        dataset = tmp_path / "out" / "train.lmdb"
        before = dataset.read_bytes()
        second = run_command(tmp_path, "convert", "a", "out", "--work", "work2", "--cores", "2")
        assert second.returncode == 1 and "another conversion is writing into" in second.stderr
        config = tmp_path / "config.yaml"
        results = str(tmp_path / "out")
        config.write_text(yaml.safe_dump({"results": results, "work": "work3", "splits": {"x": {"source": "a"}}}))
        snakefile = packaged_snakefile()
        plain = run_in(tmp_path, sys.executable, "-m", "snakemake", "--snakefile", snakefile, "--configfile", config)
        assert plain.returncode != 0 and f"another conversion is writing into {results}" in plain.stdout + plain.stderr
        assert dataset.read_bytes() == before and not (tmp_path / "out" / "x.lmdb").exists()
    finally:
        kill_group(first)


def packaged_snakefile() -> Path:
    """The packaged workflow's Snakefile, as a host workflow's ``module`` names it."""
    import imagefolder_lmdb

    return imagefolder_lmdb.SNAKEFILE


def test_settings_as_flags_give_the_files_of_a_config_file(tmp_path: Path) -> None:
    """The same settings as flags and --set, in a config file, and as convert(config=): the same files."""
    make_images(str(tmp_path / "a"), images=6, classes=2, seed=1, workers=1)
    flags = ["--quality", "80", "--set", "encode.reencode=always", "--shards", "2", "--cores", "2"]
    succeeded(run_command(tmp_path, "convert", "a", "by-flags", *flags))
    config = {
        "results": "by-file",
        "work": "work-by-file",
        "splits": {"train": {"source": str(tmp_path / "a"), "shards": 2}},
        "encode": {"quality": 80, "reencode": "always"},
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    succeeded(run_command(tmp_path, "convert", "--configfile", "config.yaml", "--cores", "2"))
    python = (
        "from imagefolder_lmdb import convert; convert('a', 'by-python', shards=2, cores=2, "
        "config={'encode': {'quality': 80, 'reencode': 'always'}})"
    )
    succeeded(run_in(tmp_path, sys.executable, "-c", python))
    files = [every_key_and_value(tmp_path / name / "train.lmdb") for name in ("by-flags", "by-file", "by-python")]
    documents = [json.loads(items.pop(META_KEYS["json"])) for items in files]
    for document in documents:
        document.pop("created")
    assert documents[0] == documents[1] == documents[2] and documents[0]["settings"]["encode"]["quality"] == 80
    assert files[0] == files[1] == files[2]


def test_a_mistyped_setting_is_one_line_naming_the_key_meant(tmp_path: Path) -> None:
    make_images(str(tmp_path / "a"), images=2, classes=1, seed=1, workers=1)
    result = run_command(tmp_path, "convert", "a", "out", "--set", "encode.qualty=90")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (
        "imagefolder-lmdb convert: --set encode.qualty=90: unknown key (value 90); did you mean encode.quality?\n"
    )
    flag = run_command(tmp_path, "convert", "a", "out", "--quality", "101")
    assert flag.stderr.startswith("imagefolder-lmdb convert: --quality 101: ") and len(flag.stderr.splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_rough_edges_are_one_line_each(tmp_path: Path) -> None:
    make_images(str(tmp_path / "a"), images=2, classes=1, seed=1, workers=1)
    (tmp_path / "file").write_text("x")
    expected = {
        ("a", "file"): "imagefolder-lmdb convert: OUTDIR file is a file, not a folder: name a folder "
        "(it is created if missing)\n",
        ("missing", "out"): f"imagefolder-lmdb convert: SOURCE 'missing' does not exist (relative paths are taken "
        f"from {tmp_path}). Name a folder, an archive or shard files.\n",
    }
    for (source, outdir), message in expected.items():
        result = run_command(tmp_path, "convert", source, outdir)
        assert (result.returncode, result.stdout, result.stderr) == (1, "", message)
    assert not (tmp_path / "out").exists(), "nothing created for a command that stopped"


def test_a_rerun_after_clean_shows_the_summary_instead_of_converting(tmp_path: Path) -> None:
    make_images(str(tmp_path / "a"), images=4, classes=2, seed=1, workers=1)
    command = ["convert", "a", "out", "--shards", "1", "--cores", "2", "--clean"]
    succeeded(run_command(tmp_path, *command))
    dataset = tmp_path / "out" / "train.lmdb"
    assert dataset.exists() and not (tmp_path / "out" / "work").exists()
    stamp = dataset.stat().st_mtime_ns
    again = succeeded(run_command(tmp_path, *command))
    assert again.stdout.startswith(f"Nothing to convert: train in {tmp_path / 'out'} is up to date.\n")
    assert "train: 4 images, 2 classes, verified" in again.stdout and str(dataset) in again.stdout
    assert dataset.stat().st_mtime_ns == stamp and not (tmp_path / "out" / "work").exists()
    info = json.loads(succeeded(run_command(tmp_path, "info", dataset, "--json")).stdout)
    document, labels, _ = meta_of(dataset)
    document.pop("checksums")
    assert {key: info[key] for key in document} == document
    assert info["images_per_class"] == dict(zip(document["classes"], np.bincount(labels).tolist(), strict=True))
    assert info["file_bytes"] == dataset.stat().st_size and set(info["image_sizes"]) == {"width", "height"}
    folder = succeeded(run_command(tmp_path, "info", "out")).stdout
    assert folder.startswith(f"{dataset}: 4 images, 2 classes, ") and "classes (index, name, images):" in folder


def test_the_folder_config_init_config_prints_converts(tmp_path: Path) -> None:
    """``init-config folder`` prints a config that converts; run again, it shows the summary of what is there."""
    config = succeeded(run_command(tmp_path, "init-config", "folder")).stdout
    (tmp_path / "folder.yaml").write_text(config)
    make_images(str(tmp_path / "data" / "train"), images=4, classes=2, seed=1, workers=1)
    make_images(str(tmp_path / "data" / "val"), images=2, classes=2, seed=1, first_index=50, workers=1)
    succeeded(run_command(tmp_path, "convert", "--configfile", "folder.yaml", "--cores", "2"))
    assert meta_of(tmp_path / "out" / "val.lmdb")[0]["length"] == 2
    # the same command again: Snakemake has nothing to do (and runs no onsuccess); the summary still shows
    again = succeeded(run_command(tmp_path, "convert", "--configfile", "folder.yaml", "--cores", "2"))
    assert again.stdout.startswith("Nothing to be done: every output is up to date.\n")
    assert "val: 2 images, 2 classes, verified" in again.stdout and "(waiting)" not in again.stderr


def test_the_reader_on_a_folder_of_splits_names_the_files_it_holds(tmp_path: Path) -> None:
    from imagefolder_lmdb import LMDBDataset
    from support.datasets import random_values, write_dataset

    (tmp_path / "out").mkdir()
    for split in ("train", "val"):
        write_dataset(tmp_path / "out" / f"{split}.lmdb", random_values([10, 20]))
    with pytest.raises(IsADirectoryError) as raised:
        LMDBDataset(str(tmp_path / "out"))
    assert str(raised.value) == (
        f"{tmp_path / 'out'} is a folder of datasets, not one: it holds train.lmdb, val.lmdb. "
        f"Open one of them, e.g. LMDBDataset('{tmp_path / 'out' / 'train.lmdb'}')"
    )


def test_kaggles_zip_converts_with_no_other_argument(tmp_path: Path) -> None:
    """imagenet-object-localization-challenge.zip as Kaggle ships it: train (class folders) and val
    (labelled by the zip's LOC_val_solution.csv), one class list, from the zip alone."""
    from support.kaggle import make_kaggle_zip

    kaggle = make_kaggle_zip(tmp_path / "kaggle", classes=2, train_images=6, val_images=4, test_images=1)
    command = ["convert", kaggle.zip, "out", "--on-error", "skip", "--shards", "1", "--cores", "2"]
    succeeded(run_command(tmp_path, *command))  # its one truncated train image skipped
    train, _, _ = meta_of(tmp_path / "out" / "train.lmdb")
    val, labels, paths = meta_of(tmp_path / "out" / "val.lmdb")
    assert train["classes"] == val["classes"] == kaggle.wnids and len(paths) == 4
    truth = [kaggle.wnids.index(kaggle.ground_truth[int(path.rsplit("_", 1)[1].split(".")[0])]) for path in paths]
    assert labels.tolist() == truth


def test_the_ilsvrc2012_downloads_convert_with_no_other_argument(tmp_path: Path) -> None:
    """A folder holding ILSVRC2012_img_train.tar, ILSVRC2012_img_val.tar and the devkit: both splits,
    one class list, val labelled by the devkit's ground truth."""
    from support.ilsvrc import make_train_tar, make_val_split

    downloads = tmp_path / "imagenet"
    downloads.mkdir()
    make_images(str(tmp_path / "tree"), images=6, classes=2, seed=4, workers=1)
    wnids = sorted(path.name for path in (tmp_path / "tree").iterdir())
    make_train_tar(tmp_path / "tree", downloads / "ILSVRC2012_img_train.tar")
    val = make_val_split(downloads, wnids, lambda n: wnids[n % 2], images=4, seed=9, first_index=100)
    succeeded(run_command(tmp_path, "convert", downloads, "out", "--shards", "1", "--cores", "2"))
    train, _, _ = meta_of(tmp_path / "out" / "train.lmdb")
    val_meta, labels, paths = meta_of(tmp_path / "out" / "val.lmdb")
    assert train["classes"] == val_meta["classes"] == wnids and train["length"] == 6 and len(paths) == 4
    truth = [wnids.index(val.ground_truth[int(path.rsplit("_", 1)[1].split(".")[0])]) for path in paths]
    assert labels.tolist() == truth


def test_overwrite_names_the_other_split_and_replaces_only_a_complete_dataset(tmp_path: Path) -> None:
    """OUT holds train and val; a SOURCE of train alone with other classes: first the --overwrite
    message; with it, the val whose numbering the new train would not share is named (remove it or
    another OUTDIR), nothing replaced; a failed --overwrite run leaves the old files; a train whose
    classes are val's replaces it, numbered as val; files a killed --overwrite run set aside are put back."""
    make_images(str(tmp_path / "data" / "train"), images=4, classes=2, seed=1, workers=1)
    make_images(str(tmp_path / "data" / "val"), images=2, classes=2, seed=1, first_index=50, workers=1)
    fast = ["--shards", "1", "--cores", "2"]
    succeeded(run_command(tmp_path, "convert", "data", "out", *fast))
    train, val = tmp_path / "out" / "train.lmdb", tmp_path / "out" / "val.lmdb"
    before = train.read_bytes()
    make_images(str(tmp_path / "data2" / "train"), images=4, classes=2, seed=2, workers=1)
    for folder in sorted((tmp_path / "data2" / "train").iterdir()):
        folder.rename(folder.with_name("other_" + folder.name))
    refused = run_command(tmp_path, "convert", "data2", "out", *fast)
    assert refused.returncode == 1 and refused.stderr.startswith(f"imagefolder-lmdb convert: {train} was made from ")
    assert "Give --overwrite to replace it" in refused.stderr
    refused = run_command(tmp_path, "convert", "data2", "out", *fast, "--overwrite")
    assert refused.returncode == 1 and len(refused.stderr.splitlines()) == 1
    assert "train: class folders other_" in refused.stderr and f"remove {val}" in refused.stderr
    assert "another OUTDIR" in refused.stderr and train.read_bytes() == before
    shutil.copytree(tmp_path / "data" / "train", tmp_path / "data3" / "train")
    bad = next(next((tmp_path / "data3" / "train").iterdir()).iterdir())
    bad.write_bytes(b"not an image")
    failed = run_command(tmp_path, "convert", "data3", "out", *fast, "--overwrite")
    assert failed.returncode != 0 and train.read_bytes() == before, "a failed run keeps the old dataset"
    bad.unlink()
    replaced = succeeded(run_command(tmp_path, "convert", "data3", "out", *fast, "--overwrite"))
    assert f"train: replacing {train} once the new one is complete (--overwrite)" in replaced.stderr
    assert meta_of(train)[0]["length"] == 3 and meta_of(train)[0]["classes"] == meta_of(val)[0]["classes"]
    assert not list((tmp_path / "out").glob("*.replaced"))
    # killed while the old files were set aside (X -> X.replaced) and before the new ones were whole:
    # the next run puts them back first, so nothing is lost and the same command finds it up to date
    current = train.read_bytes()
    for path in (tmp_path / "out").glob("train.*"):
        path.rename(f"{path}.replaced")
    again = succeeded(run_command(tmp_path, "convert", "data3", "out", *fast))
    assert f"put back {train}, which an interrupted --overwrite run had set aside" in again.stderr
    assert again.stdout.startswith("Nothing to convert") and train.read_bytes() == current
    assert not list((tmp_path / "out").glob("*.replaced"))
    # killed after the new ones were whole, before the set-aside ones were removed: kept, all named
    aside = sorted(f"{path}.replaced" for path in (tmp_path / "out").glob("train.*"))
    for name in aside:
        Path(name).write_bytes(b"the old dataset")
    kept = succeeded(run_command(tmp_path, "convert", "data3", "out", *fast))
    assert f"{', '.join(aside)}: what an earlier --overwrite run replaced; remove once not needed" in kept.stderr
    assert len(aside) > 1 and all(Path(name).read_bytes() == b"the old dataset" for name in aside)


def test_a_folder_of_classes_skipped_images_verify_and_clean_with_nothing_to_do(tmp_path: Path) -> None:
    """A folder of class folders is named as split train; skipped images are named in the summary;
    ``verify OUT`` checks each dataset; --clean on a run with nothing to do removes the work folder."""
    make_images(str(tmp_path / "flat"), images=4, classes=2, seed=1, workers=1)
    bad = next(next((tmp_path / "flat").iterdir()).iterdir())
    bad.write_bytes(b"not an image")
    command = ["convert", "flat", "out", "--on-error", "skip", "--shards", "1", "--cores", "2"]
    first = succeeded(run_command(tmp_path, *command))
    assert "flat: treated as split 'train' (--split NAME to choose)" in first.stderr
    relative = f"{bad.parent.name}/{bad.name}"
    assert f"skipped: 1 ({relative})" in first.stdout + first.stderr
    checked = succeeded(run_command(tmp_path, "verify", "out"))
    assert str(tmp_path / "out" / "train.lmdb") in checked.stdout
    again = succeeded(run_command(tmp_path, *command, "--clean"))
    assert again.stdout.startswith(f"Nothing to convert: train in {tmp_path / 'out'} is up to date.\n")
    assert "shard" not in again.stderr and not (tmp_path / "out" / "work").exists()
