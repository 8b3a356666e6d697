"""What each extra of pyproject.toml installs, and the one line a command says when a package of
one is missing (issue 57): what needs it, that it is not installed here, and the pip command that
brings it, as ``pip install 'imagefolder-lmdb[parquet]'``. Every such message is worded here; the
parts that need an extra ask ``installed`` before they import it, and say ``missing_extra`` when not.
Below every other part (pyproject.toml's layers): the sources, the remote reader and the commands
alike import it, and it imports nothing but the standard library.
"""

from __future__ import annotations

import importlib.util

#: The package that code imports by name -> the extra that installs it (pyproject.toml).
EXTRA_OF = {
    "snakemake": "convert",
    "snakemake_executor_plugin_slurm": "slurm",
    "pyarrow": "parquet",
    "scipy": "ilsvrc",
    "obstore": "remote",
    "torch": "torch",
    "torchvision": "torch",
    "torchcodec": "tensor",
}


def installed(module: str) -> bool:
    """Whether ``module`` (a top-level package) can be imported here, found without importing it."""
    return importlib.util.find_spec(module) is not None


def install_line(extras: str) -> str:
    """The pip command that installs the package with ``extras`` (``convert,remote``)."""
    return f"pip install 'imagefolder-lmdb[{extras}]'"


def missing_extra(needs: str, module: str, extras: str | None = None) -> str:
    """One line: ``needs`` (what the user asked for) needs ``module`` (named as pip names its package),
    which is not installed here, and the install of its extra (or of ``extras``, where more is wanted)."""
    package = module.replace("_", "-")
    return f"{needs} needs {package}, which is not installed here: {install_line(extras or EXTRA_OF[module])}"
