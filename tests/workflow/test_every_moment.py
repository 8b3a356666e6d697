"""A harness that tries every moment (issue 49): for each hold point of HOLD_POINTS a conversion
reaches, each action in {SIGKILL of the process tree, SIGINT, a second ``convert`` into the same
OUTDIR with another source, or with other settings}, and each scenario (below), a small conversion
runs to that point, the action lands there, everything finishes, and the invariants hold:

- a command that exits 0 leaves OUTDIR holding its own source's conversion (records, meta and
  ``made_from``), with a verify report naming that file; one that did not do its work exits non-zero;
- after an interruption the same command finishes with the records and meta of an uninterrupted run
  (``created`` aside), its verify report naming the file present, no part LMDB or temporary left.

A point added to HOLD_POINTS is covered here without a new test. Three scenarios: a first
conversion into an empty OUTDIR; an ``--overwrite`` of another source's dataset there (it alone
reaches set-aside); a publish (OUTDIR a URL on the session's SeaweedFS, ``--work`` the local
folder: it alone reaches the upload's points, and its object must be the local file, with no
pending upload left). Two points need a first failure to be reached at all: put-back (an
--overwrite that failed) and recovered (the rerun after a kill between set-aside and success),
tried by test_front_door.py. ``make test`` runs a sample (a first conversion with the first three
actions, a publish killed at each upload point: ~4 min on 2 cores); ``IMAGEFOLDER_LMDB_EVERY_MOMENT=full``
(``.ci/run``, after ``make test``) runs the whole matrix.

One more action needs a source of its own (issue 57): a label file rewritten at each moment of a first
conversion with ``--labels``. Whatever the command then does, its dataset holds the labels of the file
its ``made_from`` records; with the first file put back, the same command never leaves a dataset of
the second file's labels claiming the first (it makes the first's, finds it up to date, or asks for
``--overwrite`` over a dataset that records the second). ``make test`` tries it at planned, count_check
and encode_shard, the full matrix at the rest.

A published change (issue 58, point 7) is killed (SIGKILL, Ctrl-C) at each moment of its publish: the published
single file copied beside the pointer, the new data file's upload, every data file there before the pointer's
conditional write, the pointer written before it is read back. Throughout, the published object names a complete
revision (the previous one until its pointer is written) and the previous revision reads as it did; after the
rerun the published pointer is the local one, and no object of its data folder is unnamed. ``make test`` tries
one moment (every data file sent, SIGKILL), the full matrix the rest (.ci/run's ``change`` selects them).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from imagefolder_lmdb import LMDBDataset
from imagefolder_lmdb.reader.document import read_document
from imagefolder_lmdb.reader.handles import close_all_envs
from imagefolder_lmdb.reader.identity import meta_digest
from imagefolder_lmdb.writing.hold_points import HOLD_POINTS, LIVE_POINTS, NO_MERGE_POINTS
from support.datasets import assert_same_dataset, assert_same_samples
from support.images import jpeg_bytes, make_images
from support.label_trees import write_images
from support.seaweed import Seaweed
from support.workflow import kill_tree, snakemake_environment, wait_for_hold

COMMAND = [sys.executable, "-m", "imagefolder_lmdb.cli", "convert"]
OPTIONS = ["--shards", "1", "--cores", "1"]
ELSEWHERE = {"put-back", "recovered"}
#: The points only a publish (OUTDIR a URL) reaches; it reaches the others as a first conversion does.
UPLOAD = {"upload-part", "upload-complete"}
MOMENTS = [("encode_shard:0" if point == "encode_shard" else point) for point in HOLD_POINTS if point not in ELSEWHERE]
ACTIONS = ["sigkill", "sigint", "second", "second-settings"]
#: "no-merge": a first conversion with --no-merge (issue 60): it alone reaches NO_MERGE_POINTS, and not
#: the merge's; its split must read as the one-file conversion does.
SCENARIOS = ["fresh", "overwrite", "publish", "no-merge"]
#: The points only a conversion with a merge reaches.
MERGE_ONLY = {"merge", "write_meta", "written"}
#: What ``make test`` runs of the matrix; the rest with IMAGEFOLDER_LMDB_EVERY_MOMENT=full (.ci/run).
SAMPLE = {("fresh", "sigkill"), ("fresh", "sigint"), ("fresh", "second"), ("publish", "sigkill")}
#: The moments of the no-merge scenario ``make test`` tries (SIGKILL only); the rest with FULL.
NO_MERGE_SAMPLE = {"data-file"}
NO_MERGE_SAMPLE_RUNS = {("no-merge", "sigkill", moment) for moment in NO_MERGE_SAMPLE}
FULL = os.environ.get("IMAGEFOLDER_LMDB_EVERY_MOMENT") == "full"
#: The label file's rewrite: its two contents (the second swaps every label) and the moments ``make test`` tries.
FIRST_LABELS = "id,label\n" + "".join(f"{n:04d},{'cat' if n % 2 else 'dog'}\n" for n in range(6))
SECOND_LABELS = FIRST_LABELS.replace("cat", "x").replace("dog", "cat").replace("x", "dog")
REWRITE_SAMPLE = {"planned", "count_check", "encode_shard:0"}


def default_sigint() -> None:
    """A child of a background job inherits SIGINT ignored: the tested command gets the default."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two small trees (one split each), the cheapest source there is."""
    base = tmp_path_factory.mktemp("moments")
    for name, seed in (("one", 3), ("two", 4)):
        make_images(str(base / name / "train"), images=6, classes=2, seed=seed, workers=1)
    return base / "one", base / "two"


@pytest.fixture(scope="module")
def clean(sources: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The OUTDIR of an uninterrupted run of the first source."""
    folder = tmp_path_factory.mktemp("clean")
    finished(run(folder, [*COMMAND, sources[0], "out", *OPTIONS]))
    return folder / "out"


@pytest.fixture(scope="module")
def held_by_two(sources: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The OUTDIR of an uninterrupted run of the second source: what an --overwrite replaces."""
    folder = tmp_path_factory.mktemp("two")
    finished(run(folder, [*COMMAND, sources[1], "out", *OPTIONS]))
    return folder / "out"


@contextlib.contextmanager
def started(cwd: Path, command: list[str | Path], hold: str) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """``command`` parked at ``hold`` in its own process group; the group is killed whatever happens."""
    marker = cwd / "held"
    environment = {**snakemake_environment(), "IMAGEFOLDER_LMDB_TEST_HOLD": hold}
    environment["IMAGEFOLDER_LMDB_TEST_HOLD_MARKER"] = str(marker)
    process = subprocess.Popen(
        list(map(str, command)), cwd=cwd, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True, preexec_fn=default_sigint,
    )  # fmt: skip
    try:
        yield process, marker
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()


def run(cwd: Path, command: list[str | Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(map(str, command)), cwd=cwd, env=snakemake_environment(), capture_output=True, text=True,
        timeout=600, preexec_fn=default_sigint,
    )  # fmt: skip


def finished(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    return result


def assert_whole(outdir: Path, clean_outdir: Path, source: Path, scenario: str = "fresh") -> None:
    """OUTDIR holds ``source``'s conversion as an uninterrupted run makes it, reports naming it (without a
    merge: a pointer whose split reads as the one-file conversion does, its verify report naming its revision)."""
    dataset = outdir / "train.lmdb"
    report = json.loads((outdir / "train.verify.json").read_text())
    if scenario == "no-merge":
        assert_same_samples(dataset, clean_outdir / "train.lmdb")
        document = LMDBDataset(str(dataset)).meta_document
        close_all_envs()
        assert report["revision"] == 1 and all(os.path.isfile(path) for path in report["data_files"])
    else:
        assert_same_dataset(dataset, clean_outdir / "train.lmdb")
        document = read_document(str(dataset)) or {}
    made_from = document.get("made_from") or json.loads((outdir / "work" / "train" / "made_from.json").read_text())
    assert str(source) in json.dumps(made_from)
    assert report["dataset_meta_digest"] == meta_digest(document)
    for name in ("train.contact.png", "train.classes.png", "train.benchmarks.tsv"):
        assert (outdir / name).exists()
    leftovers = [p for p in outdir.rglob("*") if ".incomplete" in p.name or p.name.endswith(".replaced")]
    assert leftovers == []
    temporaries = outdir / "work" / ".temporary"
    assert not temporaries.exists() or list(temporaries.iterdir()) == [], "a killed run's temporaries stayed"


def reached(scenario: str, moment: str) -> bool:
    """Whether ``scenario`` reaches ``moment`` where no other scenario tries it as well: a first
    conversion sets nothing aside, and a publish converts as a first conversion does."""
    if moment == "set-aside":
        return scenario == "overwrite"
    if (scenario == "no-merge") != (moment in NO_MERGE_POINTS):
        return scenario == "no-merge" and moment not in MERGE_ONLY | UPLOAD
    return (scenario == "publish") == (moment in UPLOAD)


@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize(
    ("scenario", "moment"),
    [(scenario, moment) for scenario in SCENARIOS for moment in MOMENTS if reached(scenario, moment)],
)
def test_every_moment(
    scenario: str,
    moment: str,
    action: str,
    sources: tuple[Path, Path],
    clean: Path,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    sampled = (scenario, action) in SAMPLE or (scenario, action, moment) in NO_MERGE_SAMPLE_RUNS
    if not sampled and not FULL:
        pytest.skip("the full matrix runs with IMAGEFOLDER_LMDB_EVERY_MOMENT=full (.ci/run, after make test)")
    if action.startswith("second") and moment in ("starting", "plan"):
        pytest.skip(f"nothing is written yet at {moment}: the second command is the owner")
    one, two = sources
    command = [*COMMAND, one, "out", *OPTIONS]
    if scenario == "overwrite":
        shutil.copytree(request.getfixturevalue("held_by_two"), tmp_path / "out", symlinks=True)
        command.append("--overwrite")
    url = None
    if scenario == "publish":  # converted in OUTDIR's place (--work), then uploaded
        request.getfixturevalue("s3_env").put("datasets", "probe", b"")  # the bucket exists
        url = f"s3://datasets/{uuid.uuid4().hex}"
        command = [*COMMAND, one, url, "--work", tmp_path / "out", *OPTIONS]
    if scenario == "no-merge":
        command.append("--no-merge")
    with started(tmp_path, command, moment) as (process, marker):
        wait_for_hold(marker, process, timeout=300)  # type: ignore[arg-type]
        if action == "sigkill":
            kill_tree(process)
        elif action == "sigint":
            os.killpg(process.pid, signal.SIGINT)
            _, stderr = process.communicate(timeout=300)
            if process.returncode != 0:  # it may have finished first: 0 and its work done
                assert process.returncode == 130, stderr[-3000:]
                assert "Traceback" not in stderr and "the same command" in stderr, stderr  # how to go on
        else:
            source, settings = (two, []) if action == "second" else (one, ["--quality", "80"])
            second = run(tmp_path, [*command[: len(COMMAND)], source, *command[len(COMMAND) + 1 :], *settings])
            assert second.returncode != 0, "a second command into a held OUTDIR must be refused"
            assert "another conversion is writing into" in second.stderr
            marker.unlink()  # released: the first goes on and must finish with its own work
            stdout, stderr = process.communicate(timeout=300)
            assert process.returncode == 0, (stdout + stderr)[-3000:]
            assert_whole(tmp_path / "out", clean, one, scenario)
            assert_published(url, tmp_path / "out")
            return
    again = finished(run(tmp_path, command))
    assert "Traceback" not in again.stderr
    assert_whole(tmp_path / "out", clean, one, scenario)
    assert_published(url, tmp_path / "out")


def assert_published(url: str | None, outdir: Path) -> None:
    """A publish's object is the local file of the command that exited 0, with no pending upload left."""
    if url is None:
        return
    from imagefolder_lmdb.publish.s3_multipart import Credentials, S3Multipart

    credentials = Credentials.from_environment()
    assert credentials is not None
    bucket, key = f"{url}/train.lmdb".removeprefix("s3://").split("/", 1)
    upload = S3Multipart(bucket, key, credentials)
    assert [found for found in upload.pending() if found.key == key] == [], "a pending upload was left"
    endpoint = os.environ["AWS_ENDPOINT_URL"]
    with urllib.request.urlopen(f"{endpoint}/{bucket}/{key}", timeout=30) as response:
        assert response.read() == (outdir / "train.lmdb").read_bytes()


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A flat folder of six images, which a label file labels."""
    folder = tmp_path_factory.mktemp("labelled") / "train"
    write_images(folder, [f"{n:04d}.jpg" for n in range(6)])
    return folder


# not "starting": released there, `python -m` holds again where it imports its own module once more;
# "plan" is the same moment for the label file (nothing read yet)
@pytest.mark.parametrize("moment", [moment for moment in MOMENTS if reached("fresh", moment) and moment != "starting"])
def test_label_file_rewritten(moment: str, labelled: Path, tmp_path: Path) -> None:
    if moment not in REWRITE_SAMPLE and not FULL:
        pytest.skip("the full matrix runs with IMAGEFOLDER_LMDB_EVERY_MOMENT=full (.ci/run, after make test)")
    labels = tmp_path / "train.csv"
    labels.write_text(FIRST_LABELS)
    command = [*COMMAND, labelled, "out", *OPTIONS, "--split", "train", "--labels", labels]
    with started(tmp_path, command, moment) as (process, marker):
        wait_for_hold(marker, process, timeout=300)  # type: ignore[arg-type]
        labels.write_text(SECOND_LABELS)
        marker.unlink()
        _, stderr = process.communicate(timeout=300)
        assert "Traceback" not in stderr, stderr[-3000:]
    assert_labels_recorded(tmp_path / "out")
    labels.write_text(FIRST_LABELS)
    again = run(tmp_path, command)
    assert "Traceback" not in again.stderr
    recorded = assert_labels_recorded(tmp_path / "out")
    if again.returncode == 0:
        assert recorded == FIRST_LABELS, "a dataset of the second file's labels was kept as the first's"
    else:  # made of the second file (the plan read it), which the dataset records: replaced on request only
        assert recorded == SECOND_LABELS and "--overwrite" in again.stderr, again.stderr[-3000:]


def assert_labels_recorded(outdir: Path) -> str | None:
    """The label file content the dataset in OUTDIR records (None: no dataset), after checking that
    the dataset holds that content's labels. A label file edited after a run is a change (issue 58): a
    split of revisions records what it is made from in its current revision's document."""
    dataset = outdir / "train.lmdb"
    if read_document(str(dataset)) is None:
        return None
    made_from = LMDBDataset(str(dataset)).meta_document["made_from"]
    close_all_envs()
    [(_, digest)] = made_from["recipe"]["labels"].values()
    contents = {hashlib.sha256(text.encode()).hexdigest()[:20]: text for text in (FIRST_LABELS, SECOND_LABELS)}
    assert digest in contents, "the dataset records a label file that was never there"
    loaded = LMDBDataset(str(dataset))
    labelled_as = [f"{Path(path).stem},{loaded.classes[target]}" for path, target in loaded.samples]
    close_all_envs()
    assert labelled_as == contents[digest].splitlines()[1:], "the labels are not those of the file recorded"
    return contents[digest]


# -- a change (issue 58): a split's next revision, killed or interrupted at each of its moments ---------------
#: What ``make test`` tries of a change: one moment per action of SAMPLE; the rest with
#: IMAGEFOLDER_LMDB_EVERY_MOMENT=full. A change's moments are CHANGE_POINTS (writing/hold_points.py).
CHANGE_SAMPLE = {("change-encode", "sigkill"), ("change-written", "sigint"), ("change-added", "second")}


def change_tree(tree: Path) -> None:
    """Two images added to the first class, one removed from the second."""
    first, second = sorted(path for path in tree.iterdir() if path.is_dir())[:2]
    for number, image in enumerate(sorted(first.iterdir())[:2]):
        shutil.copyfile(image, first / f"added{number}{image.suffix}")
    sorted(second.iterdir())[0].unlink()


def assert_revision_whole(dataset: Path, tree: Path) -> None:
    """The split at ``dataset`` reads ``tree`` as ImageFolder lists it: paths, targets and bytes."""
    from torchvision.datasets import ImageFolder

    close_all_envs()
    ours, theirs = LMDBDataset(str(dataset)), ImageFolder(str(tree))
    assert [(os.path.join(str(tree), path), target) for path, target in ours.samples] == theirs.samples
    assert all(ours.get_bytes(i) == Path(path).read_bytes() for i, (path, _) in enumerate(theirs.samples))


def assert_change_finished(outdir: Path, tree: Path) -> None:
    """The changed tree's revision current and whole, its reports naming it, no file left unnamed."""
    from imagefolder_lmdb.reader.revision_format import data_file_path
    from imagefolder_lmdb.work.split_document import split_document
    from imagefolder_lmdb.writing.revisions import read_split

    dataset = outdir / "train.lmdb"
    assert_revision_whole(dataset, tree)
    document = split_document(str(dataset))
    assert document is not None
    report = json.loads((outdir / "train.verify.json").read_text())
    assert report["dataset_meta_digest"] == meta_digest(document)
    named = {data_file_path(str(dataset), file.id) for file in read_split(str(dataset)).current.files}
    assert {str(path) for path in (outdir / "train.lmdb.d").iterdir()} == named, "an unnamed file was left"
    assert not (outdir / "work" / "train" / "added.lmdb").exists()
    assert [p for p in outdir.rglob("*") if ".incomplete" in p.name] == []


@pytest.mark.parametrize("action", ["sigkill", "sigint", "second"])
@pytest.mark.parametrize("moment", ["change-encode", "change-added", "change-written"])
def test_a_change_at_every_moment(moment: str, action: str, sources: tuple[Path, Path], tmp_path: Path) -> None:
    """Whatever lands at a moment of a change, the split holds the previous revision or the new one,
    complete, and the same command finishes the change."""
    if (moment, action) not in CHANGE_SAMPLE and not FULL:
        pytest.skip("the full matrix runs with IMAGEFOLDER_LMDB_EVERY_MOMENT=full (.ci/run, after make test)")
    tree = tmp_path / "data" / "train"
    for number, name in enumerate(("ants", "bees")):  # RGB JPEGs, stored as they are: the records are the files
        (tree / name).mkdir(parents=True)
        for index in range(3):
            (tree / name / f"{index}.jpg").write_bytes(jpeg_bytes(seed=number * 10 + index, size=(40, 32)))
    before = tmp_path / "before"
    shutil.copytree(tree, before)
    command = [*COMMAND, tree, "out", *OPTIONS]
    finished(run(tmp_path, command))
    change_tree(tree)
    with started(tmp_path, command, moment) as (process, marker):
        wait_for_hold(marker, process, timeout=300)  # type: ignore[arg-type]
        if action == "sigkill":
            kill_tree(process)
        elif action == "sigint":
            os.killpg(process.pid, signal.SIGINT)
            _, stderr = process.communicate(timeout=300)
            assert "Traceback" not in stderr, stderr[-3000:]
        else:
            second = run(tmp_path, [*COMMAND, sources[1], "out", *OPTIONS])
            assert second.returncode != 0 and "another conversion is writing into" in second.stderr
            marker.unlink()
            stdout, stderr = process.communicate(timeout=300)
            assert process.returncode == 0, (stdout + stderr)[-3000:]
            assert_change_finished(tmp_path / "out", tree)
            return
    # killed: the previous revision current and whole, or (its pointer replaced) the new one
    with contextlib.nullcontext() if moment == "change-written" else as_before(tree, before):
        assert_revision_whole(tmp_path / "out" / "train.lmdb", tree)
    again = finished(run(tmp_path, command))
    assert "Traceback" not in again.stderr
    assert_change_finished(tmp_path / "out", tree)


@contextlib.contextmanager
def as_before(tree: Path, before: Path) -> Iterator[None]:
    """The tree as it was before the change, at its path (the dataset's samples are relative to it)."""
    changed = tree.parent / "changed"
    tree.rename(changed)
    shutil.copytree(before, tree)
    try:
        yield
    finally:
        shutil.rmtree(tree)
        changed.rename(tree)


# -- publishing a change (issue 58, point 7): killed or interrupted at each of its upload moments ---------------
#: The moments of publishing a split's first change, in the order it reaches them: the published single file
#: copied beside the pointer, the new data file's upload (a part sent; every part sent, not completed),
#: every data file there and the pointer's conditional write not made, the pointer written and not read back.
PUBLISH_CHANGE_MOMENTS = ["publish-copied", "upload-part", "upload-complete", "publish-sent", "publish-pointer"]
#: What ``make test`` tries of them; the rest with IMAGEFOLDER_LMDB_EVERY_MOMENT=full (.ci/run's "change").
PUBLISH_CHANGE_SAMPLE = {("publish-sent", "sigkill")}


def small_tree(tree: Path) -> Path:
    """Two classes of three RGB JPEGs, stored as they are: the records are the files."""
    for number, name in enumerate(("ants", "bees")):
        (tree / name).mkdir(parents=True)
        for index in range(3):
            (tree / name / f"{index}.jpg").write_bytes(jpeg_bytes(seed=number * 10 + index, size=(40, 32)))
    return tree


def object_bytes(url: str) -> bytes | None:
    """The object at ``url`` (``s3://bucket/key``) by a plain GET on the session's SeaweedFS; None if none."""
    import urllib.error

    try:
        with urllib.request.urlopen(f"{os.environ['AWS_ENDPOINT_URL']}/{url.removeprefix('s3://')}", timeout=30) as got:
            return bytes(got.read())
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise


def data_objects(pointer: str) -> set[str]:
    """The content ids of the objects under ``pointer``'s data folder (``…/train.lmdb.d/``), by the S3 listing."""
    bucket, key = pointer.removeprefix("s3://").split("/", 1)
    listing = f"{os.environ['AWS_ENDPOINT_URL']}/{bucket}?list-type=2&prefix={key}.d/"
    text = urllib.request.urlopen(listing, timeout=30).read().decode()
    return {part.split("</Key>")[0].rsplit("/", 1)[1].removesuffix(".lmdb") for part in text.split("<Key>")[1:]}


def reads_as(url: str, trees: list[Path]) -> int:
    """Which of ``trees`` the split published at ``url`` reads as (paths, targets, bytes): its index.
    Opening it opens every data file its current revision names: a revision with one missing fails here."""
    from torchvision.datasets import ImageFolder

    from imagefolder_lmdb.reader import LMDBReader

    published = LMDBReader(url)
    found = [(path, target) for path, target in published.samples]
    for index, tree in enumerate(trees):
        listed = ImageFolder(str(tree)).samples
        if found == [(os.path.relpath(path, tree), target) for path, target in listed]:
            assert [published.get_bytes(i) for i in range(len(listed))] == [Path(p).read_bytes() for p, _ in listed]
            return index
    raise AssertionError(f"{url} reads as none of the trees: {found}")


def assert_change_published(url: str, outdir: Path, tree: Path) -> None:
    """After the rerun: the published pointer is the local one, reads the changed tree, and every object
    of its data folder is a data file a kept revision names, with no pending upload left."""
    from imagefolder_lmdb.publish.revisions import local_pointer, named_files
    from imagefolder_lmdb.publish.s3_multipart import Credentials, S3Multipart

    local = outdir / "train.lmdb"
    assert object_bytes(url) == local.read_bytes(), "the published pointer is not the local one"
    found = local_pointer(str(local))
    close_all_envs()
    assert found is not None
    assert data_objects(url) == set(named_files(found[0])), "an object no revision names was left"
    assert reads_as(url, [tree]) == 0
    credentials = Credentials.from_environment()
    assert credentials is not None
    bucket, key = url.removeprefix("s3://").split("/", 1)
    assert S3Multipart(bucket, key, credentials).pending() == [], "a pending upload was left"


def published_runs() -> list[tuple[str, str, str]]:
    """(scenario, moment, action): "first", the first change of a split published as one file (it alone
    copies that file); "next", a change of a published pointer (revision 2 -> 3), SIGKILL only."""
    runs = [("first", moment, action) for moment in PUBLISH_CHANGE_MOMENTS for action in ("sigkill", "sigint")]
    return runs + [("next", moment, "sigkill") for moment in PUBLISH_CHANGE_MOMENTS if moment != "publish-copied"]


def assert_previous_readable(url: str, pinned: Any, previous: list[tuple[bytes, int]], revision: int) -> None:
    """The previous revision reads as it did: by the reader opened on it, or, once the pointer took the
    place of the single file that reader opened (a first change: its reads stop, object changed), as
    ``revision=1`` of the pointer."""
    from imagefolder_lmdb.reader import LMDBReader

    reader = pinned if revision > 1 or LMDBReader(url).revision in (None, 1) else LMDBReader(url, revision=1)
    assert [(reader.get_bytes(i), target) for i, target in enumerate(reader.targets)] == previous


@pytest.mark.parametrize(("scenario", "moment", "action"), published_runs())
def test_a_published_change_at_every_moment(
    scenario: str, moment: str, action: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Whatever lands at a moment of publishing a change, the published object names a complete revision
    (the previous one, or the new one once its pointer is written), the previous revision reads as it did
    throughout, and the same command publishes the change: the local pointer, no object left unnamed."""
    if ((moment, action) not in PUBLISH_CHANGE_SAMPLE or scenario != "first") and not FULL:
        pytest.skip("the full matrix runs with IMAGEFOLDER_LMDB_EVERY_MOMENT=full (.ci/run, after make test)")
    from imagefolder_lmdb.reader import LMDBReader

    request.getfixturevalue("s3_env").put("datasets", "probe", b"")
    prefix = f"s3://datasets/{uuid.uuid4().hex}"
    url = f"{prefix}/train.lmdb"
    tree = small_tree(tmp_path / "data" / "train")
    command = [*COMMAND, tree, prefix, "--work", tmp_path / "out", *OPTIONS]
    finished(run(tmp_path, command))  # published as one file
    if scenario == "next":
        shutil.copyfile(tree / "ants" / "0.jpg", tree / "bees" / "extra.jpg")
        finished(run(tmp_path, command))  # published as revision 2 of a pointer
    before = tmp_path / "before" / "train"
    shutil.copytree(tree, before)
    pinned = LMDBReader(url)
    revision = pinned.revision or 1
    previous = [(pinned.get_bytes(i), target) for i, target in enumerate(pinned.targets)]
    change_tree(tree)
    with started(tmp_path, command, moment) as (process, marker):
        wait_for_hold(marker, process, timeout=300)  # type: ignore[arg-type]
        if action == "sigkill":
            kill_tree(process)
        else:
            os.killpg(process.pid, signal.SIGINT)
            _, stderr = process.communicate(timeout=300)
            assert "Traceback" not in stderr, stderr[-3000:]
            assert process.returncode in (0, 130), stderr[-3000:]
    written = reads_as(url, [before, tree])  # the previous revision, or the new one: complete either way
    assert written == 0 or moment == "publish-pointer", "the new pointer was published before its moment"
    assert_previous_readable(url, pinned, previous, revision)
    again = finished(run(tmp_path, command))
    assert "Traceback" not in again.stderr
    assert_change_published(url, tmp_path / "out", tree)
    assert_previous_readable(url, pinned, previous, revision)


# -- a --no-merge publish (issue 60, point 4): data files uploaded as they finish, the pointer last ----------
#: Its moments, in the order it reaches them: a data file's multipart upload with a part sent, then before it
#: completes (publish/upload.py's points, reached here first by the live upload beside Snakemake), the data
#: object whole and unnamed while the conversion goes on, the conversion done with every data file there and
#: the pointer not yet sent (publish/revisions.py's "publish-sent").
LIVE_MOMENTS = ["upload-part", "upload-complete", *LIVE_POINTS, "publish-sent"]
#: What ``make test`` tries of it; the rest with IMAGEFOLDER_LMDB_EVERY_MOMENT=full (.ci/run: ``live``).
LIVE_SAMPLE = {("upload-part", "sigkill")}


@pytest.mark.parametrize("action", ["sigkill", "sigint", "second"])
@pytest.mark.parametrize("moment", LIVE_MOMENTS)
def test_live_publish_at_every_moment(
    moment: str, action: str, sources: tuple[Path, Path], clean: Path, tmp_path: Path, s3_env: Seaweed
) -> None:
    """Whatever lands at a moment of the live upload, the prefix holds no pointer or the whole split, with at
    most unnamed data objects; the same command then publishes the split sending only what was missing."""
    if (moment, action) not in LIVE_SAMPLE and not FULL:
        pytest.skip("the full matrix runs with IMAGEFOLDER_LMDB_EVERY_MOMENT=full (.ci/run, after make test)")
    from support.live_publish import assert_live_published, objects

    s3_env.put("datasets", "probe", b"")  # the bucket exists
    url = f"s3://datasets/{uuid.uuid4().hex}"
    command = [*COMMAND, sources[0], url, "--work", tmp_path / "out", *OPTIONS, "--no-merge"]
    with started(tmp_path, command, moment) as (process, marker):
        wait_for_hold(marker, process, timeout=300)  # type: ignore[arg-type]
        if action == "sigkill":
            kill_tree(process)
        elif action == "sigint":
            os.killpg(process.pid, signal.SIGINT)
            _, stderr = process.communicate(timeout=300)
            if process.returncode != 0:
                assert process.returncode == 130, stderr[-3000:]
                assert "Traceback" not in stderr and "the same command" in stderr, stderr
        else:
            second = run(tmp_path, [*command[: len(COMMAND)], sources[1], *command[len(COMMAND) + 1 :]])
            assert second.returncode != 0 and "another conversion is writing into" in second.stderr
            marker.unlink()
            stdout, stderr = process.communicate(timeout=300)
            assert process.returncode == 0, (stdout + stderr)[-3000:]
    before = objects(f"{url}/train.lmdb.d/")
    again = finished(run(tmp_path, command))
    assert "Traceback" not in again.stderr
    assert_whole(tmp_path / "out", clean, sources[0], "no-merge")
    assert_live_published(url, tmp_path / "out", before)
