"""Fixtures shared by the test modules: the generated image tree and its conversion by the real
snakemake CLI. Helpers and data builders live in the support package (tests/support), never here:
no test module imports conftest or another test module.

tests/unit needs no snakemake; tests/workflow runs it on real JPEG/PNG files generated here, with
the repository's Snakefile and a config written into a temp folder; tests/cluster runs it on SLURM.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.register_assert_rewrite("support")  # its assertions explain their failures as the tests' do

from support.fault_proxy import FaultProxy  # noqa: E402
from support.http_range import RangeServer  # noqa: E402
from support.images import TREE_CLASSES, TREE_IMAGES, make_images  # noqa: E402
from support.interrupting import StartedCommands  # noqa: E402
from support.seaweed import Seaweed, SeaweedError  # noqa: E402
from support.sharing import Snapshot, built_once  # noqa: E402
from support.workflow import Converted, Run, convert  # noqa: E402


def pytest_configure(config: pytest.Config) -> None:
    # Local runs never need SLURM, yet where its executor plugin is installed (make test keeps it out of
    # .venv: tests/cluster put it on their own runs' path) every snakemake start runs `scontrol show
    # config`: ~9 s when a slurm.conf names a controller that is down, milliseconds with an empty one.
    os.environ["SLURM_CONF"] = str(Path(tempfile.mkdtemp(prefix="no-slurm-")) / "slurm.conf")
    Path(os.environ["SLURM_CONF"]).touch()
    # Object-store clients without credentials in their environment fall back to the cloud's metadata
    # address: in the tests, that fallback goes to a closed loopback port and fails at once.
    os.environ.setdefault("AWS_METADATA_ENDPOINT", "http://127.0.0.1:9")


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests sharing a module fixture run on one worker; slow tests are handed out first
    (support/scheduling.py)."""
    from support.scheduling import assign_groups

    assign_groups(items)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """Stop a ``--dist loadgroup`` run whose groups did not take effect (support/scheduling.py)."""
    from support.scheduling import check_grouped

    if node.config.getoption("dist") == "loadgroup":
        check_grouped(ids)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup`` (make test) with the long poles handed out first (support/scheduling.py)."""
    if config.getoption("dist") != "loadgroup":
        return None
    from support.scheduling import LongPoleFirst

    return LongPoleFirst(config, log)


@pytest.fixture(scope="session")
def image_tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A small ImageNet-like tree, generated once per test run, shared by the workers; read-only
    (the session fails at its end should a test have changed it)."""

    def build(folder: Path) -> None:
        make_images(str(folder / "train"), images=TREE_IMAGES, classes=TREE_CLASSES, seed=3, workers=2)

    root = built_once(tmp_path_factory, "tree", build) / "train"
    snapshot = Snapshot.of(root)
    yield root
    snapshot.assert_unchanged(root)


@pytest.fixture
def tree_copy(image_tree: Path, tmp_path: Path) -> Path:
    """A private copy of the tree that a test may damage."""
    copy = tmp_path / "source"
    shutil.copytree(image_tree, copy)
    return copy


@pytest.fixture(scope="session")
def converted(image_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Converted]:
    """The test tree converted once per test run with default settings, shared by the workers;
    read-only (its results and work files are checked unchanged at the end of the session)."""

    def build(folder: Path) -> None:
        result = convert(folder, image_tree)
        result.run.check()
        (folder / "run.json").write_text(json.dumps({"returncode": result.run.returncode, "output": result.run.output}))

    workdir = built_once(tmp_path_factory, "converted", build)
    run = Run(**json.loads((workdir / "run.json").read_text()))
    result = Converted(workdir, image_tree, workdir / "results" / "train.lmdb", run)
    outputs = (workdir / "results", workdir / "work")
    snapshot = Snapshot.of(*outputs)
    yield result
    snapshot.assert_unchanged(*outputs)


@pytest.fixture
def convert_in_tmp(tmp_path: Path) -> Callable[..., Converted]:
    def run(source: Path, **kwargs: Any) -> Converted:
        return convert(tmp_path / "run", source, **kwargs)

    return run


@pytest.fixture
def fresh_envs() -> Iterator[None]:
    """The test opens its files afresh (py-lmdb opens a path once per process)."""
    from imagefolder_lmdb.reader import close_all_envs  # scripts/ is on the path once support is imported

    close_all_envs()
    yield
    close_all_envs()


@pytest.fixture(scope="session")
def seaweed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seaweed]:
    """SeaweedFS serving S3 on 127.0.0.1, one per test session (per pytest-xdist worker, on ports of
    its own). A server that cannot start fails the tests that need it, saying why (never a skip)."""
    server = Seaweed(tmp_path_factory.mktemp("seaweed"), os.environ.get("PYTEST_XDIST_WORKER", "master"))
    try:
        server.start()
    except SeaweedError as exc:
        pytest.fail(f"SeaweedFS (the S3 server of the remote reader's tests) did not start: {exc}", pytrace=False)
    yield server
    server.stop()


@pytest.fixture
def s3_env(seaweed: Seaweed, monkeypatch: pytest.MonkeyPatch) -> Seaweed:
    """The S3 variables pointing at the session's SeaweedFS, for this test (and processes it starts)."""
    for name, value in seaweed.env().items():
        monkeypatch.setenv(name, value)
    return seaweed


@pytest.fixture(scope="session")
def range_server() -> Iterator[RangeServer]:
    """An in-memory HTTP object server honouring Range, ETag and If-Match, on 127.0.0.1."""
    server = RangeServer().start()
    yield server
    server.stop()


@pytest.fixture
def fault_proxy(range_server: RangeServer) -> Iterator[FaultProxy]:
    """A proxy in front of ``range_server`` that answers with the faults a test asks for."""
    proxy = FaultProxy(range_server.port).start()
    yield proxy
    proxy.stop()


@pytest.fixture
def commands() -> Iterator[StartedCommands]:
    """Start the commands a test interrupts (``commands.start``): SIGINT at its default, as at a terminal,
    however the suite was started; each ends with its process group and all it started, whatever the
    test's outcome."""
    started = StartedCommands()
    try:
        yield started
    finally:
        started.end()
