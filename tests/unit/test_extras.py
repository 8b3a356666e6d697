"""What each kind of install holds (issue 53): without torch the reader reads (LMDBReader) and
LMDBDataset says in one line what to install; without torchvision LMDBDataset is a plain torch
Dataset; a conversion that needs an extra's package names the extra before any job."""

from __future__ import annotations

import copy
import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from imagefolder_lmdb.config.check import check_config
from imagefolder_lmdb.config.problems import ConfigError
from imagefolder_lmdb.config.schema import load_schema
from imagefolder_lmdb.extras import EXTRA_OF
from imagefolder_lmdb.publish.destination import url_outdir
from imagefolder_lmdb.run.launch import ConvertError
from support import REPO
from support.datasets import write_dataset
from support.images import png_bytes
from support.package import project_requirements

SCHEMA = load_schema(str(REPO / "config" / "schema.yaml"))

#: Run in a fresh interpreter with ``blocked`` unimportable (None in sys.modules, as if not installed).
WITHOUT = """if True:
    import sys
    for name in {blocked!r}:
        sys.modules[name] = None
    {code}
"""


def run_without(blocked: list[str], code: str) -> subprocess.CompletedProcess[str]:
    program = WITHOUT.format(blocked=blocked, code=code)
    return subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=False)


def test_without_torch_the_reader_reads_and_lmdb_dataset_names_what_to_install(lmdb_file: Path) -> None:
    code = f"""from imagefolder_lmdb import LMDBReader
    ds = LMDBReader({str(lmdb_file)!r})
    image, label = ds[0]
    print(type(image).__name__, len(ds.get_bytes(0)) > 0, "torch" in sys.modules and sys.modules["torch"] is not None)
    from imagefolder_lmdb import LMDBDataset"""
    done = run_without(["torch", "torchvision"], code)
    assert done.stdout.split() == ["Image", "True", "False"], done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError: LMDBDataset is a torch Dataset, and torch is not installed: pip")
    assert "'imagefolder-lmdb[torch]'" in last and "LMDBReader" in last


def test_without_torchvision_lmdb_dataset_is_a_plain_torch_dataset(lmdb_file: Path) -> None:
    code = f"""from imagefolder_lmdb import LMDBDataset
    ds = LMDBDataset({str(lmdb_file)!r})
    print(*[cls.__name__ for cls in type(ds).__mro__], ds[0][1])"""
    done = run_without(["torchvision"], code)
    assert done.returncode == 0, done.stderr[-2000:]
    names = done.stdout.split()
    assert names[:2] == ["LMDBDataset", "LMDBReader"] and "Dataset" in names and "VisionDataset" not in names
    assert names[-1] == "0"


@pytest.fixture
def lmdb_file(tmp_path: Path) -> Path:
    """Two PNGs stored as they are, written by the workflow's writers (no Snakemake run)."""
    path = tmp_path / "small.lmdb"
    write_dataset(path, [png_bytes(seed) for seed in range(2)])
    return path


def missing(*modules: str) -> Any:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name in modules else real(name, *args)

    return find_spec


def test_a_split_that_needs_an_extra_names_it_before_any_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.parquet").write_bytes(b"PAR1")
    (tmp_path / "devkit.tar.gz").write_bytes(b"")
    (tmp_path / "val").mkdir()
    monkeypatch.setattr(importlib.util, "find_spec", missing("pyarrow", "scipy"))
    config = {
        "splits": {
            "train": {"source": str(tmp_path / "a.parquet"), "layout": "parquet"},
            "val": {"source": str(tmp_path / "val"), "layout": "ilsvrc-val", "devkit": str(tmp_path / "devkit.tar.gz")},
        }
    }
    with pytest.raises(ConfigError) as raised:
        check_config(config, copy.deepcopy(SCHEMA))
    said = str(raised.value)
    assert "splits.train.layout" in said and "pip install 'imagefolder-lmdb[parquet]'" in said
    assert "splits.val.devkit" in said and "pip install 'imagefolder-lmdb[ilsvrc]'" in said


def test_publishing_without_obstore_names_the_remote_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", missing("obstore"))
    with pytest.raises(ConvertError, match=r"pip install 'imagefolder-lmdb\[convert,remote\]'"):
        url_outdir(str(tmp_path), "s3://bucket/prefix", None)


def test_without_snakemake_the_command_starts_and_a_config_error_is_its_lines() -> None:
    """Issue 57: ``pip install .`` has no Snakemake; the command's flags and the config's checks
    import none, and ConfigError is then the Snakemake-free base, saying the same lines."""
    code = """from imagefolder_lmdb import cli
    from imagefolder_lmdb.config import problems
    error = problems.config_error([problems.key_problem(("splits", "train"), "one")])
    print(problems.ConfigError is problems.BaseConfigError, str(error))"""
    done = run_without(["snakemake"], code)
    assert done.stdout.strip() == "True config key splits.train: one.", done.stderr[-2000:]


def test_each_package_a_missing_extra_line_names_is_installed_by_that_extra() -> None:
    """imagefolder_lmdb.extras, the one home of those lines, names the extra pyproject.toml gives."""
    for module, extra in EXTRA_OF.items():
        brought = {canonicalize_name(Requirement(line).name) for line in project_requirements([extra])}
        assert canonicalize_name(module) in brought, f"[{extra}] does not install {module}"
