"""Each rule job is a new Python process that imports its step's module: what that import drags in is
paid by every job of every conversion. A step's module imports what its work needs, not the command's
launcher, the publisher, the remote client, every kind of source or the whole reader (imports issue)."""

from __future__ import annotations

import subprocess
import sys

import pytest

#: What no step needs at its start: the command's launch and publish (run by the package's ``convert``,
#: not by a job), the remote client (asyncio), and each kind of source (the registry imports the one a
#: job reads when it asks for it).
NO_STEP_NEEDS = (
    "imagefolder_lmdb.run.launch",
    "imagefolder_lmdb.publish.destination",
    "imagefolder_lmdb.remote.client",
    "asyncio",
    "imagefolder_lmdb.sources.folder",
    "imagefolder_lmdb.sources.indexed_archive",
    "imagefolder_lmdb.sources.parquet",
    "imagefolder_lmdb.sources.unpacked",
    "imagefolder_lmdb.sources.webdataset",
)
#: The dataset (the reader's views, its records' sources) is verify's only.
NO_DATASET = ("imagefolder_lmdb.reader.dataset",)
#: The layouts' table imports every labelling (ILSVRC's, the label files', tqdm): the listing's steps only.
NO_LAYOUTS = ("imagefolder_lmdb.sources.layouts",)
#: tqdm imports importlib.metadata (with email, zipfile, csv): the steps that show no progress bar.
NO_BAR = ("tqdm", "importlib.metadata")

#: Each step's module, and what its import must leave out besides NO_STEP_NEEDS.
LEFT_OUT = {
    "count_check": ("numpy", "PIL", *NO_DATASET),
    "extract": ("numpy", "PIL", "lmdb", *NO_DATASET, *NO_LAYOUTS),
    "encode_shard": ("numpy", *NO_DATASET, *NO_LAYOUTS),
    "merge": ("numpy", *NO_DATASET, *NO_LAYOUTS, *NO_BAR),
    "report_split": ("numpy", "lmdb", *NO_DATASET, *NO_LAYOUTS, *NO_BAR),
    "write_meta": ("PIL", "tarfile", *NO_DATASET, *NO_LAYOUTS, *NO_BAR),
    "data_file": ("tarfile", *NO_DATASET, *NO_LAYOUTS, *NO_BAR),
    "write_pointer": ("tarfile", *NO_DATASET, *NO_LAYOUTS, *NO_BAR),
    "verify": ("tarfile", *NO_LAYOUTS),
}


@pytest.mark.parametrize("step", sorted(LEFT_OUT))
def test_a_steps_module_imports_only_what_its_work_needs(step: str) -> None:
    absent = (*NO_STEP_NEEDS, *LEFT_OUT[step])
    script = (
        f"import sys\nimport imagefolder_lmdb.steps.{step}\n"
        f"print('\\n'.join(name for name in {absent!r} if name in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [], f"importing imagefolder_lmdb.steps.{step} imported {done.stdout.split()}"


def test_every_step_is_checked() -> None:
    from importlib import resources

    files = resources.files("imagefolder_lmdb.steps").iterdir()
    steps = {path.name.removesuffix(".py") for path in files if path.name.endswith(".py")}
    assert steps - {"__init__"} == set(LEFT_OUT)
