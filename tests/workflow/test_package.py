"""The reader, the workflow and the commands installed with pip: the wheel pip builds from a clone
(as ``pip install git+<URL>`` does) holds one package, ``imagefolder_lmdb`` (src/), and Snakemake's
logger plugin ``snakemake_logger_plugin_imagefolder_lmdb`` (a top-level package, as Snakemake finds
plugins only so; ``imagefolder-lmdb convert``'s progress board), with the reader
as its subpackage ``imagefolder_lmdb.reader`` and the workflow's files themselves under
``imagefolder_lmdb/workflow``, declares the licence and the requirements, and, installed into a
fresh venv and run from a folder that knows nothing of the checkout, reads a dataset, runs
``imagefolder-lmdb`` and converts with ``imagefolder-lmdb convert`` (resuming after a kill)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from imagefolder_lmdb.reader import META_KEYS, LMDBDataset, checksum
from support import REPO
from support.datasets import every_key_and_value
from support.images import jpeg_bytes, png_bytes
from support.legacy import pickled, write_legacy
from support.package import commit_working_tree, fresh_venv, install_exact, pip_install, project_wheel
from support.readme import runnable_blocks
from support.workflow import Converted, kill_group, wait_for_hold, write_config

PACKAGE = "imagefolder_lmdb"
PLUGIN = "snakemake_logger_plugin_imagefolder_lmdb"
COMMAND = "imagefolder-lmdb"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
DIST_INFO = f"{PACKAGE}-{PYPROJECT['project']['version']}.dist-info"


def shipped_files() -> list[str]:
    """The package's files as git tracks them: every file under src/imagefolder_lmdb (its modules
    and its package data, the class lists); the workflow's files, which the build maps in from the
    checkout's top folders, are counted apart: workflow_files."""
    tracked = subprocess.run(["git", "ls-files", "src"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    names = [path.removeprefix("src/") for path in tracked.split()]
    return [name for name in names if not name.startswith(f"{PACKAGE}/workflow/")]


def workflow_files() -> list[str]:
    """What the workflow reads at run time, as paths inside its folder: the Snakefile and its report
    text, every rule file and each file a rule names relative to itself (scripts, schema, report
    captions, conda envs with their post-deploy scripts), and the profiles."""
    names = {"Snakefile", *re.findall(r'report: "([^"]+)"', (REPO / "Snakefile").read_text())}
    for rules in sorted((REPO / "rules").glob("*.smk")):
        names |= {f"rules/{rules.name}", *re.findall(r'"\.\./([^"]+)"', rules.read_text())}
    names |= {name.replace(".yaml", ".post-deploy.sh") for name in names if name.startswith("envs/")}
    names |= {str(path.relative_to(REPO)) for path in (REPO / "profiles").glob("*/config.yaml")}
    # the shipped configs, which `imagefolder-lmdb init-config` prints (and imagenet100.yaml's list)
    names |= {
        str(path.relative_to(REPO)) for pattern in ("*.yaml", "*.txt") for path in (REPO / "config").glob(pattern)
    }
    return sorted(name for name in names if (REPO / name).is_file())


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The working tree as a commit of a git repository of its own (the wheel is built from a clone)."""
    return commit_working_tree(tmp_path_factory.mktemp("repository") / "imagefolder-lmdb")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a clone of the working tree, once per run (test_installs.py's too)."""
    return project_wheel(tmp_path_factory)


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed; returns its folder."""
    folder = tmp_path_factory.mktemp("venv") / "fresh"
    pip_install(fresh_venv(folder), wheel)
    return folder


def installed_only() -> dict[str, str]:
    """This environment without PYTHONPATH: only what is installed is found."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def run_in(venv: Path, cwd: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """A program of the venv, run from ``cwd`` with no PYTHONPATH: only what is installed is found."""
    program = [str(venv / "bin" / command[0]), *command[1:]]
    return subprocess.run(
        program, cwd=cwd, env=installed_only(), capture_output=True, text=True, timeout=300, check=False
    )


def start_held_in(venv: Path, cwd: Path, hold: str, *command: str) -> tuple[subprocess.Popen, Path]:
    """``run_in`` started in the background, in its own process group, its script parked at ``hold``."""
    marker = cwd / "held"
    environment = {
        **installed_only(),
        "IMAGEFOLDER_LMDB_TEST_HOLD": hold,
        "IMAGEFOLDER_LMDB_TEST_HOLD_MARKER": str(marker),
    }
    program = [str(venv / "bin" / command[0]), *command[1:]]
    quiet = subprocess.DEVNULL
    process = subprocess.Popen(program, cwd=cwd, env=environment, stdout=quiet, stderr=quiet, start_new_session=True)
    return process, marker


def meta_less_creation_time(items: dict[bytes, bytes]) -> dict:
    document = json.loads(items.pop(META_KEYS["json"]))
    document.pop("created")
    return document


def test_wheel_holds_one_package_shipping_the_reader_itself(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        shipped = {name: archive.read(name) for name in names if name.startswith((f"{PACKAGE}/", f"{PLUGIN}/"))}
        licence = archive.read(f"{DIST_INFO}/licenses/LICENSE")
    assert {name.split("/")[0] for name in names} == {PACKAGE, PLUGIN, DIST_INFO}, "no top-level `dataset`"
    assert sorted(name for name in shipped if "/workflow/" not in name) == sorted(shipped_files())

    for name, content in shipped.items():
        if "/workflow/" not in name:  # the workflow's files: test_wheel_ships_the_workflow_itself
            assert content == (REPO / "src" / name).read_bytes(), f"{name} is the checkout's file itself"
    assert f"{PACKAGE}/reader/dataset.py" in shipped, "the reader, a subpackage"
    assert licence == (REPO / "LICENSE").read_bytes()
    staged = subprocess.run(["git", "ls-files", "-s"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    modes = {line.split("\t")[1]: line.split()[0] for line in staged.splitlines()}
    reader = [path for path in modes if path.startswith(f"src/{PACKAGE}/reader/")]
    assert reader and all(modes[path] == "100644" for path in reader), "the reader's one copy: plain files"
    for module in ("scripts/dataset.py", f"src/{PACKAGE}/dataset.py"):  # re-exports (tests/unit/test_style.py)
        assert modes[module] == "100644", f"{module}: a file, not a link"


def test_wheel_ships_the_workflow_itself(wheel: Path) -> None:
    """Every file the rules read at run time, byte for byte the checkout's, and nothing else under
    workflow/: ``imagefolder-lmdb convert`` and a host's ``module`` need no checkout."""
    prefix = f"{PACKAGE}/workflow/"
    with zipfile.ZipFile(wheel) as archive:
        shipped = {
            name.removeprefix(prefix): archive.read(name) for name in archive.namelist() if name.startswith(prefix)
        }
    assert sorted(shipped) == workflow_files()
    assert {"Snakefile", "rules/common.smk", "config/schema.yaml", "scripts/merge.py"} <= shipped.keys()
    for name, content in shipped.items():
        assert content == (REPO / name).read_bytes(), f"{name} is the checkout's file itself"


def test_wheel_declares_licence_requirements_and_command(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        metadata = Parser().parsestr(archive.read(f"{DIST_INFO}/METADATA").decode())
        entry_points = archive.read(f"{DIST_INFO}/entry_points.txt").decode()
    assert metadata["License-Expression"] == "MIT" and metadata["License-File"] == "LICENSE"
    declared = [Requirement(line) for line in metadata.get_all("Requires-Dist")]
    base = {requirement.name.lower(): requirement for requirement in declared if requirement.marker is None}
    # the reader's (zlib-ng: its CRC-32, reader/format.py), and PyYAML for convert-legacy's defaults
    # (config/schema.yaml); torch is an extra (issue 53)
    assert set(base) == {"lmdb", "numpy", "pillow", "tqdm", "pyyaml", "zlib-ng"}
    extras = {
        extra: {r.name.lower() for r in declared if r.marker is not None and r.marker.evaluate({"extra": extra})}
        for extra in ("convert", "torch")
    }
    # the torch extra brings torchvision too: the training code the README shows imports its transforms
    assert extras == {"convert": {"snakemake", "braceexpand", "pygments"}, "torch": {"torch", "torchvision"}}
    assert {"torch", "convert", "slurm", "parquet", "ilsvrc", "tensor", "remote", "all"} <= set(
        metadata.get_all("Provides-Extra")
    )
    requires = {
        requirement.name.lower(): requirement
        for requirement in declared
        if requirement.name != PYPROJECT["project"]["name"]
    }
    lines = [line.split("#")[0].strip() for line in (REPO / "requirements.txt").read_text().splitlines()]
    pins = [Requirement(line) for line in lines if line]
    for pin in (pin for pin in pins if pin.name.lower() in requires):
        (version,) = (spec.version for spec in pin.specifier)
        assert requires[pin.name.lower()].specifier.contains(version), f"{pin} outside {requires[pin.name.lower()]}"
    for floor in (
        "numpy==1.26.4",
        "pillow==10.4.0",
        "torch==2.4.0",
        "torchvision==0.19.0",
    ):  # what training environments have
        name, version = floor.split("==")
        for required in [r for r in declared if r.name.lower() == name]:  # torch: in each extra that brings it
            assert required.specifier.contains(version), f"{floor} refused by {required}"
    assert f"{COMMAND} = {PACKAGE}.cli:main" in entry_points


def test_installed_package_reads_a_dataset(venv: Path, converted: Converted, tmp_path: Path) -> None:
    probe = """if True:
        import importlib.util, json, sys, zlib
        import imagefolder_lmdb
        from imagefolder_lmdb import LMDBDataset
        ds = LMDBDataset(sys.argv[1], decode="bytes")
        print(json.dumps({
            "package": imagefolder_lmdb.__file__,
            "top_level_dataset": importlib.util.find_spec("dataset") is not None,
            "samples": ds.samples, "root": ds.root, "crc": [zlib.crc32(ds[i][0]) for i in range(len(ds))],
            "image": list(LMDBDataset(sys.argv[1])[0][0].size),
        }))
    """
    result = run_in(venv, tmp_path, "python", "-c", probe, str(converted.lmdb))
    assert result.returncode == 0, result.stderr[-3000:]
    got = json.loads(result.stdout)
    assert Path(got["package"]).is_relative_to(venv), "the installed package, not the checkout's files"
    assert not got["top_level_dataset"], "nothing installed, or on the path, as `dataset`"
    ds = LMDBDataset(converted.lmdb)
    assert [tuple(sample) for sample in got["samples"]] == ds.samples and got["root"] == ds.root
    assert got["crc"] == [checksum(ds.get_bytes(i)) for i in range(len(ds))]
    assert got["image"] == list(ds[0][0].size)


def test_readme_training_example_runs_installed(venv: Path, converted: Converted, tmp_path: Path) -> None:
    # the README's examples take the installed package when there is one; here no scripts/ exists to fall back on
    (tmp_path / "results" / "demo").mkdir(parents=True)
    for split in ("train", "val"):  # the examples read the demo's two splits: one dataset stands for both
        shutil.copy(converted.lmdb, tmp_path / "results" / "demo" / f"{split}.lmdb")
    examples = [code for kind, code in runnable_blocks() if kind == "python" and "from imagefolder_lmdb" in code]
    # the resume at another world size counts the demo's 240 images in its steps: test_readme runs it on them
    examples = [code for code in examples if "ElasticDistributedSampler" not in code]
    # a union reads two trees: here train and val are one dataset twice (test_readme runs it on the demo's)
    examples = [code for code in examples if "LMDBDataset([" not in code]
    assert len(examples) == 4, "training, several labels per image, mid-epoch resume, decoding at size"
    printed = ""
    for code in examples:
        result = run_in(venv, tmp_path, "python", "-c", code)
        assert result.returncode == 0, f"{code}\n{result.stderr[-3000:]}"
        printed += result.stdout
    assert "images left in this epoch" in printed


def test_installed_command_verifies_and_converts(venv: Path, converted: Converted, tmp_path: Path) -> None:
    for subcommand in ("convert", "verify", "convert-legacy", "add-locations"):
        shown = run_in(venv, tmp_path, COMMAND, subcommand, "--help")
        assert shown.returncode == 0 and f"usage: {COMMAND} {subcommand}" in shown.stdout, shown.stderr
    overview = run_in(venv, tmp_path, COMMAND, "--help")
    assert overview.returncode == 0 and all(name in overview.stdout for name in ("convert", "verify", "convert-legacy"))
    unknown = run_in(venv, tmp_path, COMMAND, "import")
    assert unknown.returncode == 2 and "invalid choice: 'import'" in unknown.stderr
    incomplete = run_in(venv, tmp_path, COMMAND, "convert", str(tmp_path))
    assert incomplete.returncode == 2 and "give SOURCE and OUTDIR (or --configfile FILE)" in incomplete.stderr

    verified = run_in(venv, tmp_path, COMMAND, "verify", str(converted.lmdb), "--full")
    assert verified.returncode == 0 and verified.stdout.startswith(f"OK {converted.lmdb}: "), verified.stderr
    legacy, output = tmp_path / "legacy.lmdb", tmp_path / "converted.lmdb"
    write_legacy(legacy, pickled([(jpeg_bytes(seed), seed % 2) for seed in range(5)] + [(png_bytes(9), 1)]))
    converted_legacy = run_in(venv, tmp_path, COMMAND, "convert-legacy", str(legacy), str(output))
    assert converted_legacy.returncode == 0 and "OK " in converted_legacy.stdout, converted_legacy.stderr
    assert "6 images, 2 classes" in converted_legacy.stdout
    checked = run_in(venv, tmp_path, COMMAND, "verify", str(output), "--full")
    assert checked.returncode == 0 and checked.stdout.startswith("OK "), checked.stdout + checked.stderr
    refused = run_in(venv, tmp_path, COMMAND, "verify", str(legacy))
    assert refused.returncode == 1 and "imagefolder-lmdb convert-legacy" in refused.stdout, "naming the fix"


def test_editable_install_reads_scripts_in_place(repository: Path, tmp_path: Path) -> None:
    python = fresh_venv(tmp_path / "editable")
    pip_install(python, repository, editable=True)
    probe = (
        "import imagefolder_lmdb.reader as d, imagefolder_lmdb as p\n"
        "from imagefolder_lmdb.convert import WORKFLOW as w\n"
        "print(d.__file__, (w / 'Snakefile').resolve(), (w / 'rules' / '../scripts/merge.py').resolve(), p.LMDBDataset)"
    )
    result = run_in(tmp_path / "editable", tmp_path, "python", "-c", probe)
    assert result.returncode == 0, result.stderr[-3000:]
    reader, snakefile, script = (Path(word).resolve() for word in result.stdout.split()[:3])
    assert reader == (repository / "src" / PACKAGE / "reader" / "__init__.py").resolve()
    assert snakefile == (repository / "Snakefile").resolve(), "the workflow convert runs is the checkout's"
    assert script == (repository / "scripts" / "merge.py").resolve(), "a rule's ../scripts/ path leads to its script"


def test_wheel_ships_the_class_lists(wheel: Path) -> None:
    """``classes: imagenet1k`` needs its file wherever the workflow runs; the words' licence goes with it."""
    folder = REPO / "src" / PACKAGE / "classes" / "data"
    with zipfile.ZipFile(wheel) as archive:
        for path in sorted(folder.iterdir()):
            assert archive.read(f"{PACKAGE}/classes/data/{path.name}") == path.read_bytes(), path.name


def test_installed_convert_resumes_after_a_kill_and_equals_the_workflow(
    venv: Path, converted: Converted, tmp_path: Path
) -> None:
    """``imagefolder-lmdb convert SOURCE OUTDIR`` from a folder outside the checkout, killed while a
    shard is being encoded, then the same command again: the file ``snakemake --configfile`` made
    of the same source with the same settings (``converted``: shards 3, the rest the defaults)."""
    command = [COMMAND, "convert", str(converted.source), "out", "--shards", "3", "--cores", "2"]
    process, marker = start_held_in(venv, tmp_path, "encode_shard:1", *command)
    try:
        wait_for_hold(marker, process)
    finally:
        kill_group(process)
    assert not (tmp_path / "out" / "train.lmdb").exists()
    resumed = run_in(venv, tmp_path, *command)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert "train: 40 images, 4 classes, verified" in resumed.stdout, "the workflow's summary"
    assert "Nothing to be done" not in resumed.stderr and "train: 40/40 images" in resumed.stderr, "its progress board"
    for name in ("train.lmdb", "train.verify.json", "train.contact.png"):
        assert (tmp_path / "out" / name).is_file(), name
    ours, theirs = every_key_and_value(tmp_path / "out" / "train.lmdb"), every_key_and_value(converted.lmdb)
    assert meta_less_creation_time(ours) == meta_less_creation_time(theirs)
    assert ours == theirs, "every record and meta array byte for byte"


def test_convert_call_returns_the_outputs_and_raises_on_failure(venv: Path, tmp_path: Path) -> None:
    probe = """if True:
        import json, sys
        from imagefolder_lmdb import ConvertError, convert
        try:
            convert(sys.argv[1], "out", cores=1)
        except ConvertError as exc:
            failed = [str(exc), exc.returncode]
        planned = convert(sys.argv[2], "out", split="val", snakemake_args=["--dry-run"])
        whole = convert(configfile="config.yaml", snakemake_args=["--dry-run"])
        paths = lambda outputs: {k: [str(v.dataset), str(v.verify_report)] for k, v in outputs.items()}
        print(json.dumps({"failed": failed, "planned": paths(planned), "whole": paths(whole)}))
    """
    (tmp_path / "images" / "a").mkdir(parents=True)  # a dry run lists no image
    write_config(tmp_path, {"a": {"source": "images"}, "b": {"source": "images"}}, results="done")
    result = run_in(venv, tmp_path, "python", "-c", probe, str(tmp_path / "missing"), str(tmp_path / "images"))
    assert result.returncode == 0, result.stderr[-3000:]
    got = json.loads(result.stdout.splitlines()[-1])
    assert got["failed"][1] == 1 and "missing' does not exist" in got["failed"][0], "the workflow's own message"
    assert got["planned"] == {"val": [str(tmp_path / "out" / "val.lmdb"), str(tmp_path / "out" / "val.verify.json")]}
    assert got["whole"] == {name: [f"done/{name}.lmdb", f"done/{name}.verify.json"] for name in "ab"}, "as configured"
    both = run_in(venv, tmp_path, COMMAND, "convert", "images", "out", "--configfile", "config.yaml")
    assert both.returncode == 2 and "give either SOURCE and OUTDIR or --configfile FILE" in both.stderr


def test_installed_convert_submits_with_the_packaged_slurm_profile(
    venv: Path, image_tree: Path, tmp_path: Path
) -> None:
    """``--profile slurm`` is the profile shipped in the wheel (a dry run: no SLURM needed to plan)."""
    install_exact(venv / "bin" / "python", REPO / "requirements-slurm.txt")  # the [slurm] extra's plugins
    command = [COMMAND, "convert", str(image_tree), "out", "--shards", "2", "--profile", "slurm", "--", "--dry-run"]
    planned = run_in(venv, tmp_path, *command)
    assert planned.returncode == 0, planned.stdout[-3000:] + planned.stderr[-3000:]
    output = planned.stdout + planned.stderr
    profiles = next(line for line in output.splitlines() if line.startswith("Using profiles"))
    assert f"{venv}/lib/" in profiles and profiles.split()[2].endswith("imagefolder_lmdb/workflow/profiles/slurm")
    assert "encode_shard" in output and not (tmp_path / "out" / "train.lmdb").exists()
