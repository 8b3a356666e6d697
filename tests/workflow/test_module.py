"""The workflow as a Snakemake module of another workflow: a host workflow in a folder outside the
checkout imports it with ``module`` (by the checkout's Snakefile, or the installed package's),
uses its rules with a prefix or without, passes its own config, and converts."""

from __future__ import annotations

import subprocess
from pathlib import Path

from imagefolder_lmdb.convert import SNAKEFILE
from support import BIN, REPO
from support.datasets import assert_same_dataset
from support.workflow import Converted, snakemake_environment, write_config

#: The host's Snakefile: its own config, the module's rules (under a prefix, or none), and what the
#: module's onsuccess would do (a module's own does not run): its clean-up and summary.
HOST = """\
configfile: "config.yaml"


module imagefolder_lmdb:
    snakefile:
        {snakefile!r}
    config:
        config


use rule * from imagefolder_lmdb {prefix}


onsuccess:
    imagefolder_lmdb.remove_leftovers(config)
    imagefolder_lmdb.print_summary(config)
"""


def host_workflow(folder: Path, source: Path, snakefile: Path, prefix: str) -> Path:
    """A host workflow in ``folder`` converting ``source`` as split train with the module's rules."""
    folder.mkdir()
    write_config(folder, {"train": {"source": str(source), "shards": 3}})
    (folder / "Snakefile").write_text(HOST.format(snakefile=str(snakefile), prefix=prefix))
    return folder


def run_host(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The host's own ``snakemake`` in its folder (no --snakefile: the host's Snakefile)."""
    command = [str(BIN / "snakemake"), "--cores", "2", *args]
    return subprocess.run(
        command, cwd=folder, env=snakemake_environment(), capture_output=True, text=True, timeout=600, check=False
    )


def test_host_workflow_converts_with_the_module(converted: Converted, image_tree: Path, tmp_path: Path) -> None:
    host = host_workflow(tmp_path / "host", image_tree, REPO / "Snakefile", "as lmdb_*")
    result = run_host(host)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    assert "rule lmdb_encode_shard" in output, "the module's rules, under the host's prefix"
    assert "train: 40 images, 4 classes, verified" in result.stdout, "the module's summary, called by the host"
    assert_same_dataset(converted.lmdb, host / "results" / "train.lmdb")
    assert (host / "results" / "train.verify.json").is_file() and (host / "work" / "train").is_dir()


def test_module_from_the_installed_package_without_prefix(image_tree: Path, tmp_path: Path) -> None:
    """The package's own Snakefile (what `pip install` gives) as the module, its rule names kept."""
    host = host_workflow(tmp_path / "host", image_tree, SNAKEFILE, "")
    result = run_host(host, "--dry-run")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    assert "rule encode_shard" in output and "rule verify" in output
    assert "results/train.lmdb" in output, "the outputs of the host's config, in its folder"


def test_a_host_asking_only_for_the_datasets_is_told_they_are_not_verified(image_tree: Path, tmp_path: Path) -> None:
    """A host rule consuming the .lmdb file alone: verify never runs, and the summary says so (the
    docs say to depend on rules.<prefix>all.input instead)."""
    host = host_workflow(tmp_path / "host", image_tree, REPO / "Snakefile", "as lmdb_*")
    consumer = 'rule train_model:\n    default_target: True\n    input:\n        "results/train.lmdb",\n'
    consumer += '    output:\n        "model.txt",\n    shell:\n        "echo trained > {output}"\n\n\n'
    (host / "Snakefile").write_text((host / "Snakefile").read_text() + "\n\n" + consumer)
    result = run_host(host)
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    assert "train: 40 images, 4 classes, built, not verified (imagefolder-lmdb verify " in result.stdout
    assert not (host / "results" / "train.verify.json").exists()
