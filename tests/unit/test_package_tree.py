"""The tree as a newcomer and every tool read it: no file git tracks is a link, and the package finds
the workflow's one copy (the checkout's top folders in a clone, its own ``workflow/`` in a wheel:
tests/workflow/test_package.py installs one)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from imagefolder_lmdb.convert import SNAKEFILE, WORKFLOW
from imagefolder_lmdb.run.workflow_folder import workflow_folder
from support import REPO

#: git's mode for a symbolic link (``git ls-files -s``).
LINK_MODE = "120000"


def test_no_tracked_file_is_a_link() -> None:
    staged = subprocess.run(["git", "ls-files", "-s"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    links = [line.split("\t")[1] for line in staged.splitlines() if line.split()[0] == LINK_MODE]
    assert links == [], f"links break on some checkouts and confuse tools that read the tree: {links}"


def test_a_checkout_runs_its_own_workflow() -> None:
    assert WORKFLOW == REPO and SNAKEFILE == REPO / "Snakefile"
    assert not (REPO / "src" / "imagefolder_lmdb" / "workflow").exists(), "no second copy in the tree"


def fake_workflow(folder: Path) -> Path:
    (folder / "rules").mkdir(parents=True)
    (folder / "Snakefile").write_text("# a workflow\n")
    (folder / "rules" / "common.smk").write_text("# its rules\n")
    return folder


def test_a_wheel_runs_the_copy_inside_the_package(tmp_path: Path) -> None:
    package = tmp_path / "checkout" / "src" / "imagefolder_lmdb"
    fake_workflow(tmp_path / "checkout")
    assert workflow_folder(package) == tmp_path / "checkout", "a checkout: the top folders"
    inside = fake_workflow(package / "workflow")
    assert workflow_folder(package) == inside, "a wheel: the package's own copy, whatever lies around it"


def test_a_package_without_its_workflow_still_imports(tmp_path: Path) -> None:
    package = tmp_path / "site-packages" / "imagefolder_lmdb"
    package.mkdir(parents=True)
    assert workflow_folder(package) == package / "workflow", "the reader needs no workflow"


#: Names issue 42 moved, still reachable at their old names for one release (the old home's name and
#: the new one's); issue 51 deleted the re-export modules no user page named.
MOVED = {
    "imagefolder_lmdb.run.paths": ("imagefolder_lmdb.work.files", ["shard_name"]),
    "imagefolder_lmdb.remote": ("imagefolder_lmdb.reader.urls", ["is_url"]),
}


def test_moved_names_keep_their_old_names() -> None:
    for old, (new, names) in MOVED.items():
        old_module, new_module = importlib.import_module(old), importlib.import_module(new)
        assert {name: getattr(old_module, name) for name in names} == {
            name: getattr(new_module, name) for name in names
        }, old


#: The package's root: what a user imports or runs (issue 51: at most seven modules, __init__ counted).
#: ``dataset``: the reader's documented old home.
ROOT_MODULES = {"__init__", "cli", "convert", "dataset", "printable", "sampler", "transforms"}


def test_the_root_holds_what_a_user_imports_or_runs() -> None:
    root = REPO / "src" / "imagefolder_lmdb"
    modules = {path.stem for path in root.glob("*.py")}
    assert modules == ROOT_MODULES and len(modules) <= 7, sorted(modules)


#: imagefolder_lmdb.__all__: the user API (issue 42), and nothing else.
USER_API = [
    "SNAKEFILE",
    "WORKFLOW",
    "ConvertError",
    "DamagedRecordError",
    "ElasticDistributedSampler",
    "FileChangedError",
    "FormatError",
    "LMDBDataset",
    "LMDBReader",
    "LocationsWarning",
    "ReadersFullError",
    "SplitOutputs",
    "TruncatedFileError",
    "collate_label_lists",
    "convert",
    "multi_hot",
    "sampler_state_from_loader",
]


def test_the_package_lists_the_user_api_and_imports_it_lazily() -> None:
    script = (
        "import sys, warnings, imagefolder_lmdb\n"
        "print(sorted(imagefolder_lmdb.__all__))\n"
        "print(sorted(name for name in ('numpy', 'PIL', 'torch') if name in sys.modules))\n"
        "from imagefolder_lmdb import FormatError, TruncatedFileError\n"
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('error')\n"
        "    from imagefolder_lmdb import FormatError, LMDBReader, LocationsWarning\n"
        "print(FormatError.__module__)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    listed, loaded, home = done.stdout.splitlines()
    assert (listed, loaded, home) == (str(sorted(USER_API)), "[]", "imagefolder_lmdb.reader")


def test_the_readers_other_names_resolve_with_a_deprecation_naming_their_home() -> None:
    import imagefolder_lmdb
    from imagefolder_lmdb.reader import format

    with pytest.warns(DeprecationWarning, match=r"imagefolder_lmdb\.record_key .*imagefolder_lmdb\.reader"):
        assert imagefolder_lmdb.record_key is format.record_key
    with pytest.raises(AttributeError):
        _ = imagefolder_lmdb.no_such_name


def test_snakemake_finds_the_logger_plugin_by_its_package_name() -> None:
    """Snakemake finds a logger plugin as a top-level package named ``snakemake_logger_plugin_<name>``
    (no entry point): that package keeps its name while the plugin's code lives in board/ (issue 62)."""
    from snakemake_interface_logger_plugins.registry import LoggerPluginRegistry

    from imagefolder_lmdb.board.logger_plugin import LogHandler
    from imagefolder_lmdb.board.plugin_environment import PLUGIN

    assert LoggerPluginRegistry().get_plugin(PLUGIN).log_handler is LogHandler
