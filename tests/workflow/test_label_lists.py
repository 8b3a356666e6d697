"""Several labels per image and per-image fields (format version 4, issue 52), read by the reader, a
DataLoader, ``verify`` and ``info``. The converter cannot make such a file yet: the test tree converted
by the real snakemake CLI (the session's ``converted``) gets its meta rebuilt by the one builder and
stored by write_meta's own path (support/relabelled.py), with the label lists and fields below."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from functools import partial
from pathlib import Path

import lmdb
import pytest
import torch
from torch.utils.data import DataLoader
from torchdata.stateful_dataloader import StatefulDataLoader

from imagefolder_lmdb import ElasticDistributedSampler, collate_label_lists, multi_hot, sampler_state_from_loader
from imagefolder_lmdb.reader import META_KEYS, FormatError, LMDBDataset, checksum, encode_document
from imagefolder_lmdb.reader.format_targets import FieldColumn, LabelLists, pack_fields, pack_label_lists
from support import BIN
from support.http_range import RangeServer
from support.images import TREE_CLASSES, TREE_IMAGES
from support.readme import runnable
from support.relabelled import meta_document_values, rebuilt_meta, relabelled_copy, stored_meta
from support.workflow import Converted

#: torchdata 0.11 calls torch.set_vital, which torch 2.14 deprecates, at every iterator it starts.
pytestmark = pytest.mark.filterwarnings("ignore:'set_vital' is deprecated:UserWarning")


def label_list(index: int) -> list[int]:
    """Image ``index``'s classes: none for every seventh, two for every third, else one."""
    if index % 7 == 0:
        return []
    first = index % TREE_CLASSES
    return [first, (first + 1) % TREE_CLASSES] if index % 3 == 0 else [first]


LISTS = [label_list(index) for index in range(TREE_IMAGES)]
FIELDS = {
    "age": FieldColumn("int", [3 * index - 20 for index in range(TREE_IMAGES)]),
    "score": FieldColumn("float", [index / 4 for index in range(TREE_IMAGES)]),
    "caption": FieldColumn("str", [f"image {index}: café, 猫" for index in range(TREE_IMAGES)]),
    "tags": FieldColumn("list[str]", [["a", "b,c"][: index % 3] for index in range(TREE_IMAGES)]),
}


@pytest.fixture(scope="module")
def multi(converted: Converted, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The converted test tree with the label lists and fields above."""
    return relabelled_copy(converted.lmdb, tmp_path_factory.mktemp("multi"), LISTS, FIELDS)


def test_a_single_label_meta_is_rebuilt_as_write_meta_wrote_it(converted: Converted) -> None:
    """The test's path through the builder and writer gives the workflow's own bytes: nothing of the
    version-4 keys in a file that has no label lists or fields."""
    meta = stored_meta(converted.lmdb)
    values = meta_document_values(rebuilt_meta(meta))
    assert META_KEYS["label_lists"] not in values and META_KEYS["fields"] not in values
    env = lmdb.open(str(converted.lmdb), subdir=False, readonly=True, lock=False)
    with env.begin() as txn:
        for key, value in values.items():
            if key != META_KEYS["json"]:
                assert txn.get(key) == value, key
        stored = json.loads(txn.get(META_KEYS["json"]))
    env.close()
    rebuilt = json.loads(values[META_KEYS["json"]])
    volatile = ("created", "locations")
    assert {k: v for k, v in rebuilt.items() if k not in volatile} == {
        k: v for k, v in stored.items() if k not in volatile
    }
    assert "label_kind" not in stored and "fields" not in stored and stored["version"] == 1


def test_several_labels_per_image_are_the_targets(multi: Path, converted: Converted) -> None:
    single = LMDBDataset(converted.lmdb)
    ds = LMDBDataset(multi)
    assert ds.meta_document["version"] == 4 and ds.label_kind == "multi"
    assert (ds.classes, ds.class_to_idx) == (single.classes, single.class_to_idx)
    assert ds.targets == LISTS
    assert ds.samples == [(path, labels) for (path, _), labels in zip(single.samples, LISTS, strict=True)]
    assert [ds[i][1] for i in (0, 3, 4)] == [[], LISTS[3], LISTS[4]]
    carried = [sum(label in labels for labels in LISTS) for label in range(TREE_CLASSES)]
    assert ds.class_counts().tolist() == carried
    assert "Labels: multi" in repr(ds) and "age (int)" in repr(ds)


def test_fields_and_target_type(multi: Path) -> None:
    ds = LMDBDataset(multi, decode="bytes")
    assert ds.field_types == {"age": "int", "score": "float", "caption": "str", "tags": "list[str]"}
    assert ds.fields(5) == {"age": -5, "score": 1.25, "caption": "image 5: café, 猫", "tags": ["a", "b,c"]}
    assert ds.fields(-1)["age"] == 3 * (TREE_IMAGES - 1) - 20
    assert LMDBDataset(multi, decode="bytes", target_type="age")[4][1] == -8
    image, target = LMDBDataset(multi, decode="bytes", target_type=["label", "caption", "tags"])[3]
    assert target == (LISTS[3], "image 3: café, 猫", []) and image == ds.get_bytes(3)
    assert LMDBDataset(multi, decode="bytes", target_type=["score"])[2][1] == 0.5, "one name: its value (CelebA)"
    assert LMDBDataset(multi, decode="bytes", target_type=[])[2][1] is None
    halved = LMDBDataset(multi, decode="bytes", target_type=["age", "score"], target_transform=lambda t: t[0] / 2)
    assert halved[6][1] == (3 * 6 - 20) / 2
    with pytest.raises(ValueError, match=r"has no target 'agee'; choose from 'label', 'age', 'score', 'caption'"):
        LMDBDataset(multi, target_type=["label", "agee"])
    with pytest.raises(ValueError, match="target_type is empty"):
        LMDBDataset(multi, target_type=[], target_transform=str)


def test_a_dataloader_gives_multi_hot_batches(multi: Path) -> None:
    ds = LMDBDataset(multi, decode="bytes", transform=checksum)  # a sample: its record's CRC-32
    index_of = {int(crc): index for index, crc in enumerate(ds.checksums)}
    collate = partial(collate_label_lists, num_classes=len(ds.classes))
    seen = []
    for crcs, hot in DataLoader(ds, batch_size=8, shuffle=True, collate_fn=collate, num_workers=2):
        indices = [index_of[int(crc)] for crc in crcs]
        assert hot.shape == (len(indices), TREE_CLASSES) and hot.dtype == torch.float32
        for row, index in zip(hot, indices, strict=True):
            assert torch.nonzero(row).flatten().tolist() == sorted(LISTS[index])
        seen += indices
    assert sorted(seen) == list(range(TREE_IMAGES))
    _, lists = collate_label_lists([ds[3], ds[0]])
    assert lists == [LISTS[3], []], "without num_classes: the lists themselves"


def test_stateful_loader_and_elastic_sampler_resume_a_multi_label_epoch(multi: Path) -> None:
    ds = LMDBDataset(multi, decode="bytes", transform=checksum)
    index_of = {int(crc): index for index, crc in enumerate(ds.checksums)}
    collate = partial(collate_label_lists, num_classes=TREE_CLASSES)

    def loader(state: dict | None = None) -> StatefulDataLoader:
        sampler = ElasticDistributedSampler(ds, num_replicas=1, rank=0, seed=3)
        if state is not None:
            sampler.load_state_dict(state)
        return StatefulDataLoader(ds, batch_size=4, sampler=sampler, collate_fn=collate)

    def drawn(batches: object) -> list[int]:
        indices = []
        for crcs, hot in batches:  # type: ignore[attr-defined]
            indices += [index_of[int(crc)] for crc in crcs]
            assert torch.equal(hot, multi_hot([LISTS[i] for i in indices[-len(crcs) :]], TREE_CLASSES))
        return indices

    first = loader()
    batches = iter(first)
    seen = drawn(next(batches) for _ in range(4))
    state = sampler_state_from_loader(first.state_dict())
    rest = drawn(loader(state))
    assert seen + rest == list(ElasticDistributedSampler(ds, num_replicas=1, rank=0, seed=3))


def command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "imagefolder-lmdb"), *args], capture_output=True, text=True, check=False)


def test_info_and_verify_name_the_labels_and_fields(multi: Path, tmp_path: Path) -> None:
    shown = command("info", str(multi))
    assert shown.returncode == 0, shown.stderr
    assert "labels: several classes per image (a list each); fields: age (int), score (float), caption (str), " in (
        shown.stdout
    )
    described = json.loads(command("info", "--json", str(multi)).stdout)
    assert described["label_kind"] == "multi" and described["fields"][3] == {"name": "tags", "type": "list[str]"}
    carried = [sum(label in labels for labels in LISTS) for label in range(TREE_CLASSES)]
    assert list(described["images_per_class"].values()) == carried
    checked = command("verify", str(multi), "--full", "--report", str(tmp_path / "report.json"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert json.loads((tmp_path / "report.json").read_text())["problems"] == []


def rewrite_targets(path: Path, lists: LabelLists, fields: dict[str, FieldColumn]) -> None:
    """Store other label lists and fields with checksums that fit them: what a writer that skipped the
    builder's checks would leave, which only the checks of their content can find."""
    env = lmdb.open(str(path), subdir=False, lock=False)
    with env.begin(write=True) as txn:
        document = json.loads(txn.get(META_KEYS["json"]))
        values = {"label_lists": pack_label_lists(lists), "fields": pack_fields(fields)}
        for name, value in values.items():
            txn.put(META_KEYS[name], value)
            document["checksums"][name] = checksum(value)
        txn.put(META_KEYS["json"], encode_document(document))
    env.close()


def test_verify_names_each_wrong_label_list_and_field(multi: Path, tmp_path: Path) -> None:
    damaged = tmp_path / multi.name
    shutil.copyfile(multi, damaged)
    lists = LabelLists.from_lists([*LISTS[:-1], [TREE_CLASSES + 5]])
    fields = {**FIELDS, "age": FieldColumn("int", [*FIELDS["age"].values[:-1], "40"])}
    fields["caption"] = FieldColumn("str", FIELDS["caption"].values[:-1])
    rewrite_targets(damaged, lists, fields)
    report = tmp_path / "report.json"
    checked = command("verify", str(damaged), "--report", str(report))
    assert checked.returncode == 1 and "FAIL" in checked.stdout
    assert json.loads(report.read_text())["problems"] == [
        f"meta/label_lists holds 1 labels outside 0..{TREE_CLASSES - 1} (its {TREE_CLASSES} classes), the first 9",
        f"field 'age' is int, but image {TREE_IMAGES - 1}'s value is '40'",
        f"field 'caption' has {TREE_IMAGES - 1} values, expected one per image ({TREE_IMAGES})",
    ]
    with pytest.raises(FormatError, match=r"field 'age' is int.*: the file is damaged\. Copy it again"):
        LMDBDataset(damaged)


def test_the_documented_collate_example_runs() -> None:
    (example,) = [block for block in runnable() if block.kind == "python" and "collate_label_lists" in block.code]
    assert example.page == "docs/training.md"
    done = subprocess.run([str(BIN / "python"), "-c", example.code], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "multi-hot targets torch.Size([2, 3])" in done.stdout, done.stderr


def test_a_url_reads_the_label_lists_and_fields(multi: Path, range_server: RangeServer) -> None:
    url = range_server.put(f"{uuid.uuid4().hex}.lmdb", multi.read_bytes())  # the [remote] reader's ranged reads
    ds = LMDBDataset(url, decode="bytes", target_type=["label", "age"])
    assert ds.targets == LISTS and ds.fields(5)["caption"] == "image 5: café, 猫"
    assert ds[3][1] == (LISTS[3], 3 * 3 - 20) and ds[3][0] == LMDBDataset(multi, decode="bytes")[3][0]
