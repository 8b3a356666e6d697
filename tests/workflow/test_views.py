"""Views without a copy (issue 61): a class subset of a converted file and several converted files read
as one, each equal to a real conversion of the matching tree (support/view_trees.py converts them all in
one snakemake run): classes, class_to_idx, samples, targets and every record's bytes; every refusal;
DataLoader workers (fork and spawn), a StatefulDataLoader resume, URLs, and ``info`` of a view."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from torch.utils.data import DataLoader
from torchdata.stateful_dataloader import StatefulDataLoader

from imagefolder_lmdb import ElasticDistributedSampler, sampler_state_from_loader
from imagefolder_lmdb.reader import LMDBDataset, LMDBReader, checksum
from imagefolder_lmdb.reader.class_names import ClassListError
from support import BIN
from support.http_range import RangeServer
from support.relabelled import rebuilt_meta, relabelled_copy, store, stored_meta
from support.seaweed import Seaweed
from support.view_trees import FOLDER_SUBSET, LABEL_SUBSET, build, union_tree

#: torchdata 0.11 calls torch.set_vital, which torch 2.14 deprecates, at every iterator it starts.
pytestmark = pytest.mark.filterwarnings("ignore:'set_vital' is deprecated:UserWarning")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build(tmp_path_factory.mktemp("views"))


def assert_same(view: LMDBReader, converted: LMDBReader) -> None:
    """A view equals the conversion of its tree: index, labels, and every record's bytes and facts."""
    assert view.classes == converted.classes and view.class_to_idx == converted.class_to_idx
    assert view.samples == converted.samples and view.imgs == converted.imgs
    assert view.targets == converted.targets and view.label_kind == converted.label_kind
    assert [view.get_bytes(i) for i in range(len(view))] == [converted.get_bytes(i) for i in range(len(converted))]
    for name in ("image_sizes", "checksums", "storage_codes"):
        assert getattr(view, name).tolist() == getattr(converted, name).tolist(), name
    assert view.class_counts().tolist() == converted.class_counts().tolist()


def test_a_class_subset_equals_the_conversion_of_those_folders(files: dict[str, Path], tmp_path: Path) -> None:
    converted = LMDBReader(files["a_sub"])
    listed = tmp_path / "classes.txt"
    listed.write_text("# the classes of a that the subset keeps\nowl\ndog\n")
    for classes in (["owl", "dog"], listed, str(listed), files["a_sub"]):  # names, a file, a dataset's list
        view = LMDBReader(files["a"], classes=classes)
        assert_same(view, converted)
    assert view.root == LMDBReader(files["a"]).root and view.path == str(files["a"].resolve())
    assert view.source_of(2) == (str(files["a"].resolve()), 4) and view.files == [str(files["a"].resolve())]


def test_a_union_equals_the_conversion_of_the_union_of_the_trees(files: dict[str, Path]) -> None:
    converted = LMDBReader(files["ab"])
    for order in ([files["a"], files["b"]], [files["b"], files["a"]]):  # the order of the files does not matter
        union = LMDBReader(order)
        assert_same(union, converted)
    assert union.root is None and union.path == f"{files['b'].resolve()} + {files['a'].resolve()}"
    # dog/0.jpg (a), dog/0a.jpg (b), dog/1.jpg (a): a class in both files takes both sets, in walk order
    assert [union.source_of(i)[0] for i in (3, 4, 5)] == [str(files[n].resolve()) for n in ("a", "b", "a")]


def test_a_union_with_classes_is_imagefolder_over_those_folders_of_both_trees(
    files: dict[str, Path], tmp_path: Path
) -> None:
    from torchvision.datasets import ImageFolder

    trees = [files["a"].parents[1] / "a", files["a"].parents[1] / "b"]
    reference = ImageFolder(str(union_tree(tmp_path / "tree", trees, FOLDER_SUBSET)))
    view = LMDBDataset([files["a"], files["b"]], classes=FOLDER_SUBSET, decode="bytes")
    relative = [(str(Path(path).relative_to(reference.root).as_posix()), label) for path, label in reference.samples]
    assert view.classes == reference.classes and view.samples == relative and view.targets == reference.targets
    assert_same(view, LMDBReader(files["ab"], classes=FOLDER_SUBSET))


def test_multi_label_views_equal_the_conversions_of_the_label_files(files: dict[str, Path]) -> None:
    subset = LMDBReader(files["m_a"], classes=LABEL_SUBSET)
    assert_same(subset, LMDBReader(files["m_a_sub"]))
    assert [] in subset.targets, "an image left with no label is kept, with an empty list"
    union = LMDBReader([files["m_b"], files["m_a"]])
    assert_same(union, LMDBReader(files["m_ab"]))
    assert_same(
        LMDBReader([files["m_a"], files["m_b"]], classes=LABEL_SUBSET), LMDBReader(files["m_ab"], classes=LABEL_SUBSET)
    )


@pytest.mark.parametrize(
    ("paths", "options", "words"),
    [
        (
            ["a"],
            {"classes": ["dgo", "owl"]},
            "classes= names 1 class(es) that {a} does not have: 'dgo' (closest: 'dog')",
        ),
        (["a", "a_sub"], {}, "{a} and {a_sub} both hold 'dog/0.jpg': one tree cannot hold two images at one path"),
        (["a", "a"], {}, "{a}, listed twice, holds 'cat/0.jpg'"),
        (["a", "m_a"], {}, "{a} and {m_a} differ in labels (single-label; multi-label)"),
        (["a"], {"classes": "missing.txt"}, "classes=: cannot read 'missing.txt'"),
        (["a"], {"classes": []}, "classes=: the class list is empty"),
        (["a"], {"allow_mixed": True}, "allow_mixed=True applies to a union: pass a list of files"),
        ([], {}, "an empty list of files"),
    ],
    ids=[
        "missing-class",
        "same-path",
        "same-file",
        "label-kinds",
        "no-class-file",
        "empty-classes",
        "mixed-alone",
        "none",
    ],
)
def test_each_refusal_names_the_files_and_what_differs(
    files: dict[str, Path], paths: list[str], options: dict[str, Any], words: str
) -> None:
    real = {name: str(path.resolve()) for name, path in files.items()}
    given: Any = str(files[paths[0]]) if len(paths) == 1 else [files[name] for name in paths]
    with pytest.raises(ValueError) as refused:
        LMDBReader(given, **options)
    assert words.format(**real) in str(refused.value)
    assert isinstance(refused.value, ClassListError) == ("classes" in options)


def test_sizes_and_fields_that_differ_are_refused_unless_asked(files: dict[str, Path], tmp_path: Path) -> None:
    smaller = relabelled_copy(files["b"], tmp_path / "small")
    meta = stored_meta(smaller)
    meta.document["settings"]["encode"]["short_side"] = 16
    store(smaller, rebuilt_meta(meta))
    with pytest.raises(ValueError, match=r"differ in sizes \(shorter side None, longer side None; shorter side 16"):
        LMDBReader([files["a"], smaller])
    assert LMDBReader([files["a"], smaller], allow_mixed=True).samples == LMDBReader(files["ab"]).samples
    lists = LMDBReader(files["m_b"]).targets
    fielded = relabelled_copy(files["m_b"], tmp_path / "fields", lists, {"score": _column([0.5, 1.5, 2.5])})
    with pytest.raises(ValueError, match=r'differ in fields \(\{\}; \{"score": "float"\}\)'):
        LMDBReader([files["m_a"], fielded])
    mixed = LMDBReader([files["a"], files["m_a"], fielded], allow_mixed=True)
    assert mixed.label_kind == "multi" and mixed.field_types == {} and len(mixed) == 6 + 4 + 3
    plain = LMDBReader(files["a"])
    assert [[mixed.classes[c] for c in labels] for labels in mixed.targets[:6]] == [
        [plain.classes[label]] for label in plain.targets
    ], "one class each: a list of one, the files one after another"


def _column(values: list[float]) -> Any:
    from imagefolder_lmdb.reader.format_targets import FieldColumn

    return FieldColumn("float", values)


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_dataloader_workers_read_a_view(files: dict[str, Path], context: str) -> None:
    view = LMDBDataset([files["a"], files["b"]], classes=FOLDER_SUBSET, decode="bytes", transform=checksum)
    loader = DataLoader(view, batch_size=3, num_workers=2 if context == "fork" else 1, multiprocessing_context=context)
    read = [(int(crc), int(label)) for crcs, labels in loader for crc, label in zip(crcs, labels, strict=True)]
    assert read == [(int(crc), target) for crc, target in zip(view.checksums, view.targets, strict=True)]


def test_a_stateful_loader_resumes_a_view_and_refuses_another(files: dict[str, Path]) -> None:
    view = LMDBDataset([files["a"], files["b"]], decode="bytes", transform=checksum)
    index_of = {int(crc): index for index, crc in enumerate(view.checksums)}

    def loader(dataset: LMDBDataset, state: dict | None = None) -> StatefulDataLoader:
        sampler = ElasticDistributedSampler(dataset, num_replicas=1, rank=0, seed=5)
        if state is not None:
            sampler.load_state_dict(sampler_state_from_loader(state))
        made = StatefulDataLoader(dataset, batch_size=2, sampler=sampler, num_workers=1)
        if state is not None:
            made.load_state_dict(state)
        return made

    first = loader(view)
    batches = iter(first)
    seen = [index_of[int(crc)] for _ in range(2) for crc in next(batches)[0]]
    state = first.state_dict()
    rest = [index_of[int(crc)] for crcs, _ in loader(view, state) for crc in crcs]
    assert seen + rest == list(ElasticDistributedSampler(view, num_replicas=1, rank=0, seed=5))
    saved = state["_snapshot"]["_worker_snapshots"]["worker_0"]["dataset_state"]  # what the worker's copy saved
    LMDBDataset([files["b"], files["a"]]).load_state_dict(saved)  # the same view, its files named in another order
    another = LMDBDataset([files["a"], files["b"]], classes=["cat", "dog", "owl"])
    with pytest.raises(ValueError, match="the loader's state was saved reading another dataset"):
        another.load_state_dict(saved)


@pytest.mark.parametrize("store", ["http", "s3"])
def test_a_union_of_urls_reads_as_the_files_do(
    files: dict[str, Path], store: str, request: pytest.FixtureRequest
) -> None:
    if store == "http":  # the range server: ranged reads over HTTP
        server: RangeServer = request.getfixturevalue("range_server")
        urls = [server.put(f"{uuid.uuid4().hex}.lmdb", files[name].read_bytes()) for name in ("a", "b")]
    else:  # SeaweedFS's S3, through the remote reader's obstore client
        seaweed: Seaweed = request.getfixturevalue("s3_env")
        urls = [
            seaweed.put("views", f"{uuid.uuid4().hex}/{name}.lmdb", files[name].read_bytes()) for name in ("a", "b")
        ]
    remote = LMDBReader(urls, classes=FOLDER_SUBSET)
    local = LMDBReader([files["a"], files["b"]], classes=FOLDER_SUBSET)
    assert remote.samples == local.samples and remote.path == " + ".join(urls)
    assert remote.__getitems__(list(range(len(remote)))) == local.__getitems__(list(range(len(local))))
    assert [remote.get_bytes(i) for i in range(len(remote))] == [local.get_bytes(i) for i in range(len(local))]


def info(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "imagefolder-lmdb"), "info", *map(str, args)], capture_output=True, text=True)


def test_info_gives_the_counts_of_a_view(files: dict[str, Path], tmp_path: Path) -> None:
    listed = tmp_path / "subset.txt"
    listed.write_text("\n".join(FOLDER_SUBSET) + "\n")
    shown = info(files["a"], files["b"], "--union", "--classes", listed, "--json")
    assert shown.returncode == 0, shown.stderr
    counts = json.loads(shown.stdout)
    view = LMDBReader([files["a"], files["b"]], classes=FOLDER_SUBSET)
    assert counts["images_per_class"] == dict(zip(view.classes, view.class_counts().tolist(), strict=True))
    assert counts["images_per_file"] == {str(files["a"].resolve()): 4, str(files["b"].resolve()): 4}
    text = info(files["m_a"], "--classes", ",".join(LABEL_SUBSET))
    assert text.returncode == 0 and "a class subset, classes blue,red): 4 images, 2 classes" in text.stdout
    refused = info(files["a"], files["m_a"], "--union")
    assert refused.returncode == 1 and "differ in labels" in refused.stderr and "Traceback" not in refused.stderr
    assert (
        "--allow-mixed" in refused.stderr and info(files["a"], files["m_a"], "--union", "--allow-mixed").returncode == 0
    )
