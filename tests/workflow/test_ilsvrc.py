"""ImageNet as downloaded: a tar of per-class tars, a flat shuffled val tar and a devkit, generated
with the official structure, converted in place (no per-image file written) and by extraction."""

from __future__ import annotations

import csv
import json
import random
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from torchvision.datasets import ImageFolder

from imagefolder_lmdb.reader import LMDBDataset, close_all_envs
from support import REPO
from support.archives import add_member
from support.datasets import assert_same_dataset, records_and_meta
from support.ilsvrc import make_train_tar, make_val_split
from support.images import class_names, make_images
from support.workflow import Run, convert, run_snakemake, write_config

CLASSES = 5


TRAIN_IMAGES = 40


VAL_IMAGES = 30


@dataclass
class Ilsvrc:
    train_tar: Path
    val_tar: Path
    devkit: Path
    wnids: list[str]
    ground_truth: dict[int, str]  # val image number -> WNID
    train_tree: Path  # the same images as an ImageFolder tree, for comparison


@pytest.fixture(scope="module")
def ilsvrc(tmp_path_factory: pytest.TempPathFactory) -> Ilsvrc:
    base = tmp_path_factory.mktemp("ilsvrc")
    wnids = class_names(CLASSES, seed=5)
    make_images(str(base / "train_tree"), images=TRAIN_IMAGES, classes=CLASSES, seed=5, workers=2)
    make_train_tar(base / "train_tree", base / "ILSVRC2012_img_train.tar", reverse=True)  # not in name order

    by_id = list(reversed(wnids))  # the devkit's ILSVRC2012_IDs 1.. name these
    val = make_val_split(
        base, wnids, lambda n: by_id[random.Random(n).randint(1, CLASSES) - 1], VAL_IMAGES, seed=6, first_index=500
    )
    train_tar = base / "ILSVRC2012_img_train.tar"
    return Ilsvrc(train_tar, val.val_tar, val.devkit, wnids, val.ground_truth, base / "train_tree")


def ilsvrc_splits(data: Ilsvrc, val_tar: Path | None = None, **extra: object) -> dict[str, dict[str, object]]:
    return {
        "train": {"source": str(data.train_tar), "layout": "ilsvrc-train", "shards": 3, **extra},
        "val": {"source": str(val_tar or data.val_tar), "layout": "ilsvrc-val", "devkit": str(data.devkit), **extra},
    }


def run_ilsvrc(workdir: Path, splits: dict) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    config = write_config(workdir, splits)
    run_snakemake(workdir, "--configfile", str(config)).check()


@pytest.fixture(scope="module")
def streamed(ilsvrc: Ilsvrc, tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = tmp_path_factory.mktemp("streamed")
    run_ilsvrc(workdir, ilsvrc_splits(ilsvrc))
    return workdir


def assert_val_labels_match_ground_truth(ds: LMDBDataset, ground_truth: dict[int, str]) -> None:
    for path, label in ds.samples:
        number = int(path.rsplit("_", 1)[1].split(".")[0])
        assert ds.classes[label] == ground_truth[number] == path.split("/")[0], path


def test_train_matches_imagefolder_over_the_extracted_tree(ilsvrc: Ilsvrc, streamed: Path) -> None:
    reference = ImageFolder(str(ilsvrc.train_tree))
    ds = LMDBDataset(streamed / "results" / "train.lmdb")
    assert ds.class_to_idx == reference.class_to_idx
    assert ds.targets == reference.targets
    assert [p for p, _ in ds.samples] == [
        Path(p).relative_to(ilsvrc.train_tree).as_posix() for p, _ in reference.samples
    ]
    for index in range(len(ds)):
        if ds.storage_reason(index) == "passthrough":
            assert ds.get_bytes(index) == Path(reference.samples[index][0]).read_bytes()
    reasons = sorted(ds.storage_reason(i) for i in range(len(ds)) if ds.storage_reason(i) != "passthrough")
    assert reasons == ["reencoded:cmyk", "reencoded:grayscale", "reencoded:not-jpeg", "reencoded:not-jpeg"]


def test_val_is_labelled_by_the_ground_truth(ilsvrc: Ilsvrc, streamed: Path) -> None:
    val = LMDBDataset(streamed / "results" / "val.lmdb")
    train = LMDBDataset(streamed / "results" / "train.lmdb")
    assert len(val) == VAL_IMAGES
    assert val.class_to_idx == train.class_to_idx, "train and val share one class_to_idx"
    assert_val_labels_match_ground_truth(val, ilsvrc.ground_truth)
    assert [p for p, _ in val.samples] == sorted(p for p, _ in val.samples), "ImageFolder order of val/<wnid>/<file>"


def test_streaming_writes_no_per_image_file(streamed: Path) -> None:
    files = [p for p in (streamed / "work").rglob("*") if p.is_file()]
    assert not [p for p in files if p.suffix.lower() in (".jpeg", ".jpg", ".png")]
    # per split: source.json, made_from.json, members.jsonl, manifest, counts, 6 logs, 5 benchmark records and
    # Snakemake's timestamps of the two folder outputs; per shard: a stamp, a report, a log, a benchmark record
    # and a progress file (its part is temp(): removed once merged). Nothing per image.
    splits = yaml.safe_load((streamed / "config.yaml").read_text())["splits"]
    shards = {name: split["shards"] for name, split in splits.items()}
    assert len(shards) == 2 and len(files) == sum(18 + 5 * n for n in shards.values()), sorted(map(str, files))


def test_partial_val_tar_is_labelled_by_file_number(ilsvrc: Ilsvrc, tmp_path: Path) -> None:
    with tarfile.open(ilsvrc.val_tar) as full:
        members = {m.name: full.extractfile(m).read() for m in full.getmembers()}
    partial = tmp_path / "ILSVRC2012_img_val_part.tar"
    with tarfile.open(partial, "w") as tar:
        for name in sorted(members)[::3]:
            add_member(tar, name, members[name])
    workdir = tmp_path / "run"
    splits = {"val": ilsvrc_splits(ilsvrc, val_tar=partial)["val"]}
    run_ilsvrc(workdir, splits)
    val = LMDBDataset(workdir / "results" / "val.lmdb")
    assert len(val) == len(sorted(members)[::3])
    assert len(val.classes) == CLASSES
    assert_val_labels_match_ground_truth(val, ilsvrc.ground_truth)


def test_streaming_and_extracting_give_the_same_records(ilsvrc: Ilsvrc, streamed: Path, tmp_path: Path) -> None:
    run_ilsvrc(tmp_path, ilsvrc_splits(ilsvrc, extract=True))
    for split in ("train", "val"):
        close_all_envs()
        assert_same_dataset(tmp_path / "results" / f"{split}.lmdb", streamed / "results" / f"{split}.lmdb")
    assert any((tmp_path / "work" / "train" / "source" / "tree").rglob("*.JPEG")), "this route did extract"


def test_kaggle_solution_csv_labels_like_the_devkit(ilsvrc: Ilsvrc, streamed: Path, tmp_path: Path) -> None:
    solution = tmp_path / "LOC_val_solution.csv"
    with open(solution, "w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(["ImageId", "PredictionString"])
        for number, wnid in ilsvrc.ground_truth.items():
            writer.writerow([f"ILSVRC2012_val_{number:08d}", f"{wnid} 1 2 30 40 {wnid} 5 6 70 80"])
    splits = {"val": {"source": str(ilsvrc.val_tar), "layout": "ilsvrc-val", "val_labels": str(solution)}}
    run_ilsvrc(tmp_path / "run", splits)
    close_all_envs()
    assert_same_dataset(tmp_path / "run" / "results" / "val.lmdb", streamed / "results" / "val.lmdb")


@pytest.mark.parametrize("kept", [0.33, 0.5, 0.67, 0.9])
def test_truncated_train_tar_is_named(ilsvrc: Ilsvrc, tmp_path: Path, kept: float) -> None:
    # a download cut anywhere: inside a member's data (most cuts) or between members
    truncated = tmp_path / "cut" / "ILSVRC2012_img_train.tar"
    truncated.parent.mkdir()
    data = ilsvrc.train_tar.read_bytes()
    truncated.write_bytes(data[: int(len(data) * kept)])
    result = convert(tmp_path / "run", truncated, layout="ilsvrc-train")
    assert result.run.returncode != 0
    assert f"{truncated}: " in result.run.output or f"{truncated} is truncated" in result.run.output
    assert (
        "truncated" in result.run.output.replace(str(tmp_path), "") and "Download or copy it again" in result.run.output
    )


def test_missing_class_tar_is_named(ilsvrc: Ilsvrc, tmp_path: Path) -> None:
    partial = tmp_path / "ILSVRC2012_img_train.tar"
    with tarfile.open(ilsvrc.train_tar) as full, tarfile.open(partial, "w") as tar:
        for member in full.getmembers()[1:]:
            add_member(tar, member.name, full.extractfile(member).read())
    config = write_config(
        tmp_path, {"train": {"source": str(partial), "layout": "ilsvrc-train", "devkit": str(ilsvrc.devkit)}}
    )
    run = run_snakemake(tmp_path, "--configfile", str(config))
    assert run.returncode != 0
    assert f"class {ilsvrc.wnids[0]} (its tar or folder) is missing" in run.output


def test_md5_check_names_a_damaged_official_archive(ilsvrc: Ilsvrc, tmp_path: Path) -> None:
    config = write_config(tmp_path, ilsvrc_splits(ilsvrc, md5=True))
    run = run_snakemake(tmp_path, "--configfile", str(config))
    assert run.returncode != 0
    assert "differs from the published" in run.output and "ILSVRC2012_img_" in run.output


def test_ilsvrc_val_without_labels_is_a_config_error(ilsvrc: Ilsvrc, tmp_path: Path) -> None:
    config = write_config(tmp_path, {"val": {"source": str(ilsvrc.val_tar), "layout": "ilsvrc-val"}})
    run = run_snakemake(tmp_path, "--configfile", str(config))
    assert run.returncode != 0 and "splits.val.devkit" in run.output


def test_folder_of_class_tars_reads_like_the_outer_tar(ilsvrc: Ilsvrc, streamed: Path, tmp_path: Path) -> None:
    folder = tmp_path / "train"
    folder.mkdir()
    with tarfile.open(ilsvrc.train_tar) as outer:
        outer.extractall(folder, filter="data")
    run_ilsvrc(tmp_path / "run", {"train": {"source": str(folder), "layout": "ilsvrc-train"}})
    close_all_envs()
    assert_same_dataset(tmp_path / "run" / "results" / "train.lmdb", streamed / "results" / "train.lmdb")


@pytest.mark.parametrize("archive", ["val.tar", "val.tar.gz"])
def test_val_labels_csv_inside_the_val_archive(ilsvrc: Ilsvrc, streamed: Path, tmp_path: Path, archive: str) -> None:
    rows = "".join(f"ILSVRC2012_val_{n:08d},{wnid} 1 2 30 40\n" for n, wnid in ilsvrc.ground_truth.items())
    members = {f"val/{name}": data for name, data in val_members(ilsvrc).items()}
    members["meta/LOC_val_solution.csv"] = f"ImageId,PredictionString\n{rows}".encode()
    with tarfile.open(tmp_path / archive, "w:gz" if archive.endswith(".gz") else "w") as tar:
        for name, data in members.items():
            add_member(tar, name, data)
    val = {
        "source": str(tmp_path / archive),
        "root": "val",
        "layout": "ilsvrc-val",
        "val_labels": "meta/LOC_val_solution.csv",
    }
    run_ilsvrc(tmp_path / "run", {"val": val})
    close_all_envs()
    assert_same_dataset(tmp_path / "run" / "results" / "val.lmdb", streamed / "results" / "val.lmdb")


@pytest.mark.parametrize("kind", ["tar of class tars", "folder of class tars"])
def test_root_inside_an_ilsvrc_train_source(ilsvrc: Ilsvrc, streamed: Path, tmp_path: Path, kind: str) -> None:
    # the class tars in a folder of a bigger tar (or folder), beside files that are no class tar
    with tarfile.open(ilsvrc.train_tar) as outer:
        tars = {m.name: outer.extractfile(m).read() for m in outer.getmembers()}  # type: ignore[union-attr]
    members = {f"imagenet/train/{name}": data for name, data in tars.items()}
    members |= {"imagenet/README.txt": b"train/ holds the class tars", "imagenet/val/x.JPEG": b"\xff\xd8\xff\xd9"}
    source = tmp_path / ("imagenet.tar" if kind == "tar of class tars" else "imagenet")
    if kind == "tar of class tars":
        with tarfile.open(source, "w") as tar:
            for name, data in members.items():
                add_member(tar, name, data)
    else:
        for name, data in members.items():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_bytes(data)
    root = "imagenet/train" if kind == "tar of class tars" else "train"  # the folder is imagenet/ itself
    run_ilsvrc(tmp_path / "run", {"train": {"source": str(source), "layout": "ilsvrc-train", "root": root}})
    close_all_envs()
    assert_same_dataset(tmp_path / "run" / "results" / "train.lmdb", streamed / "results" / "train.lmdb")


@pytest.mark.parametrize(
    ("name", "shards"), [("imagenet.yaml", 16 + 2), ("imagenet100.yaml", 4 + 1), ("imagenet-256.yaml", 16 + 2)]
)
def test_shipped_imagenet_config_is_valid(ilsvrc: Ilsvrc, tmp_path: Path, name: str, shards: int) -> None:
    """A shipped ImageNet config with its three paths pointed at the generated archives plans the run."""
    text = (REPO / "config" / name).read_text().replace("config/imagenet100.txt", str(REPO / "config/imagenet100.txt"))
    for official, generated in [
        ("/data/imagenet/ILSVRC2012_img_train.tar", ilsvrc.train_tar),
        ("/data/imagenet/ILSVRC2012_img_val.tar", ilsvrc.val_tar),
        ("/data/imagenet/ILSVRC2012_devkit_t12.tar.gz", ilsvrc.devkit),
    ]:
        assert official in text
        text = text.replace(official, str(generated))
    config = tmp_path / name
    config.write_text(text)
    run = run_snakemake(tmp_path, "-n", "--configfile", str(config)).check()
    assert run.output.count("rule encode_shard:") == shards


def val_members(ilsvrc: Ilsvrc) -> dict[str, bytes]:
    with tarfile.open(ilsvrc.val_tar) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]


@pytest.mark.parametrize("sorted_every", [2, 1], ids=["partly-sorted", "wholly-sorted"])
def test_val_folder_sorted_or_not_is_labelled_by_file_name(
    ilsvrc: Ilsvrc, streamed: Path, tmp_path: Path, sorted_every: int
) -> None:
    # valprep.sh stopped halfway: some images already in <wnid>/ folders, the rest still flat, and a
    # Mac's "._" files beside them; every image is labelled by its number, wherever it lies
    folder = tmp_path / "val"
    for position, (name, data) in enumerate(sorted(val_members(ilsvrc).items())):
        number = int(name.split("_")[-1].split(".")[0])
        target = folder / ilsvrc.ground_truth[number] / name if position % sorted_every == 0 else folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    (folder / "._ILSVRC2012_val_00000001.JPEG").write_bytes(b"\x00\x05\x16\x07" + bytes(60))
    run_ilsvrc(tmp_path / "run", {"val": {**ilsvrc_splits(ilsvrc)["val"], "source": str(folder)}})
    items, meta = records_and_meta(tmp_path / "run" / "results" / "val.lmdb")
    streamed_items, streamed_meta = records_and_meta(streamed / "results" / "val.lmdb")
    assert items == streamed_items
    assert meta["source"].pop("ignored_files") == 1, "the ._ file, listed"
    streamed_meta["source"].pop("ignored_files")
    # ds.root: only where every record's file lies at its <wnid>/<file> path under the folder
    assert LMDBDataset(tmp_path / "run" / "results" / "val.lmdb").root == (str(folder) if sorted_every == 1 else None)
    assert LMDBDataset(streamed / "results" / "val.lmdb").root is None, "members of a tar"
    assert meta == streamed_meta


def test_val_tar_gz_with_a_wrapper_folder_unpacks_like_it_streams(
    ilsvrc: Ilsvrc, streamed: Path, tmp_path: Path
) -> None:
    archive = tmp_path / "val.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, data in val_members(ilsvrc).items():
            add_member(tar, f"val/{name}", data)
    run_ilsvrc(tmp_path / "run", {"val": {**ilsvrc_splits(ilsvrc)["val"], "source": str(archive)}})
    close_all_envs()
    assert_same_dataset(tmp_path / "run" / "results" / "val.lmdb", streamed / "results" / "val.lmdb")


def convert_val(ilsvrc: Ilsvrc, workdir: Path, **changes: str) -> Run:
    """The val split with ``changes`` to its settings, converted in ``workdir`` (not checked)."""
    workdir.mkdir(parents=True)
    config = write_config(workdir, {"val": {**ilsvrc_splits(ilsvrc)["val"], **changes}})
    return run_snakemake(workdir, "--configfile", str(config))


def test_val_source_without_images_stops(ilsvrc: Ilsvrc, tmp_path: Path) -> None:
    folder = tmp_path / "val"
    folder.mkdir()
    (folder / "readme.txt").write_text("the images are elsewhere")
    result = convert_val(ilsvrc, tmp_path / "run", source=str(folder))
    assert result.returncode != 0
    assert f"{folder}: no images found (layout ilsvrc-val" in result.output
    assert not (tmp_path / "run" / "results" / "val.lmdb").exists()


def test_half_unpacked_folder_of_class_tars_is_refused(ilsvrc: Ilsvrc, tmp_path: Path) -> None:
    # extracting the class tars one by one and stopping halfway: read as tars only, the unpacked
    # classes would be lost without a word
    folder = tmp_path / "train"
    folder.mkdir()
    with tarfile.open(ilsvrc.train_tar) as outer:
        outer.extractall(folder, filter="data")
    first = sorted(folder.glob("*.tar"))[0]
    with tarfile.open(first) as inner:
        inner.extractall(folder / first.stem, filter="data")
    first.unlink()
    result = convert(tmp_path / "run", folder, layout="ilsvrc-train")
    assert result.run.returncode != 0
    assert f"{folder} holds {CLASSES - 1} class tars and 1 class folders" in result.run.output
    assert "stopped halfway" in result.run.output


def test_damaged_devkit_is_named(ilsvrc: Ilsvrc, tmp_path: Path) -> None:
    devkit = tmp_path / "ILSVRC2012_devkit_t12.tar.gz"
    devkit.write_bytes(ilsvrc.devkit.read_bytes()[:300])
    result = convert_val(ilsvrc, tmp_path / "run", devkit=str(devkit))
    assert result.returncode != 0
    assert f"{devkit}: cannot be read as ILSVRC2012_devkit_t12.tar.gz" in result.output
    assert "download it again" in result.output


@dataclass
class SubsetIlsvrc:
    """The official layout cut to 10 classes: a tar of 10 class tars beside the val tar of a
    1,000-class devkit, most of whose images belong to the 990 classes train lacks."""

    train_tar: Path
    val_tar: Path
    devkit: Path
    train_wnids: list[str]
    ground_truth: dict[int, str]


SUBSET_TRAIN_CLASSES = 10


SUBSET_VAL_IMAGES = 40


def thousand_wnids(train_wnids: list[str]) -> list[str]:
    """The train classes plus 990 other distinct WNIDs, as the devkit lists 1,000."""
    others = (f"n{n:08d}" for n in range(20_000_000, 30_000_000, 7919))
    return sorted([*train_wnids, *[w for w, _ in zip(others, range(1000 - len(train_wnids)), strict=False)]])


@pytest.fixture(scope="module")
def ilsvrc_10(tmp_path_factory: pytest.TempPathFactory) -> SubsetIlsvrc:
    base = tmp_path_factory.mktemp("ilsvrc10")
    make_images(str(base / "train_tree"), images=30, classes=SUBSET_TRAIN_CLASSES, seed=8, workers=2)
    train_wnids = sorted(p.name for p in (base / "train_tree").iterdir())
    make_train_tar(base / "train_tree", base / "ILSVRC2012_img_train.tar", reverse=True)
    wnids = thousand_wnids(train_wnids)
    rng = random.Random(9)

    def wnid_of(number: int) -> str:  # a quarter of val in train's classes, the rest over the other 990
        return rng.choice(train_wnids) if (number - 1) % 4 == 0 else rng.choice(wnids)

    val = make_val_split(base, wnids, wnid_of, SUBSET_VAL_IMAGES, seed=10, first_index=700)
    return SubsetIlsvrc(base / "ILSVRC2012_img_train.tar", val.val_tar, val.devkit, train_wnids, val.ground_truth)


def subset_splits(data: SubsetIlsvrc, train_tar: Path | None = None) -> dict[str, dict[str, object]]:
    return {
        "train": {"source": str(train_tar or data.train_tar), "layout": "ilsvrc-train", "shards": 2},
        "val": {"source": str(data.val_tar), "layout": "ilsvrc-val", "devkit": str(data.devkit), "shards": 2},
    }


def test_ten_class_train_and_the_official_val_share_one_class_list(ilsvrc_10: SubsetIlsvrc, tmp_path: Path) -> None:
    run_ilsvrc(tmp_path, subset_splits(ilsvrc_10))
    train = LMDBDataset(tmp_path / "results" / "train.lmdb")
    val = LMDBDataset(tmp_path / "results" / "val.lmdb")
    assert train.classes == ilsvrc_10.train_wnids
    assert val.class_to_idx == train.class_to_idx
    in_train = {n: w for n, w in ilsvrc_10.ground_truth.items() if w in train.class_to_idx}
    assert 0 < len(in_train) < SUBSET_VAL_IMAGES, "the fixture must hold val images of both kinds"
    assert len(val) == len(in_train)
    assert_val_labels_match_ground_truth(val, ilsvrc_10.ground_truth)
    outside = json.loads((tmp_path / "work" / "val" / "counts.json").read_text())["outside_class_list"]
    assert outside["images"] == SUBSET_VAL_IMAGES - len(in_train)
    assert sum(outside["per_class"].values()) == outside["images"]
    assert not set(outside["per_class"]) & set(train.classes)
    report = json.loads((tmp_path / "results" / "val.verify.json").read_text())
    assert report["class_list"]["origin"] == "shared from train"
    assert report["class_list"]["images_outside"] == outside["images"]


def train_tar_with_unreadable_classes(data: SubsetIlsvrc, keep: list[str], path: Path) -> Path:
    """The train tar with every class tar outside ``keep`` replaced by bytes that are no tar: a
    run that opened one would fail on it."""
    with tarfile.open(data.train_tar) as source, tarfile.open(path, "w") as out:
        for member in source.getmembers():
            data_bytes = source.extractfile(member).read()
            if member.name.removesuffix(".tar") not in keep:
                data_bytes = b"\x00garbage, not a tar\x00" * (len(data_bytes) // 20 + 1)
            add_member(out, member.name, data_bytes)
    return path


def test_classes_key_converts_three_class_tars_and_never_opens_the_others(
    ilsvrc_10: SubsetIlsvrc, tmp_path: Path
) -> None:
    chosen = [ilsvrc_10.train_wnids[i] for i in (7, 2, 5)]
    train_tar = train_tar_with_unreadable_classes(ilsvrc_10, chosen, tmp_path / "ILSVRC2012_img_train.tar")
    workdir = tmp_path / "run"
    workdir.mkdir()
    config = write_config(workdir, subset_splits(ilsvrc_10, train_tar), classes=chosen)
    run_snakemake(workdir, "--configfile", str(config)).check()
    train = LMDBDataset(workdir / "results" / "train.lmdb")
    val = LMDBDataset(workdir / "results" / "val.lmdb")
    assert train.classes == val.classes == sorted(chosen)
    assert set(train.targets) == {0, 1, 2}
    assert_val_labels_match_ground_truth(val, ilsvrc_10.ground_truth)
    assert len(val) == sum(w in chosen for w in ilsvrc_10.ground_truth.values())
    counts = json.loads((workdir / "work" / "train" / "counts.json").read_text())
    assert counts["outside_class_list"]["unread_classes"] == SUBSET_TRAIN_CLASSES - 3

    config = write_config(workdir, subset_splits(ilsvrc_10, train_tar), classes=[*chosen, "n99999999"])
    run = run_snakemake(workdir, "--configfile", str(config))
    assert run.returncode != 0
    assert "names 1 class(es) the source does not hold: n99999999" in run.output
