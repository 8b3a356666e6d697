"""Where the workflow's own files are (its Snakefile, rules, rule scripts, schema, report, profiles).

One copy of each lives at the top of the repository. An installed wheel holds them inside the
package, at ``imagefolder_lmdb/workflow/`` (the build maps the folders there: pyproject.toml,
``[tool.hatch.build.targets.wheel.force-include]``); a checkout, or an editable install of one,
finds them at the repository root, two folders above this package.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]


def workflow_folder(package: Path = PACKAGE) -> Path:
    """The folder whose ``Snakefile`` is the workflow's: the wheel's copy inside ``package``, else
    the checkout ``package`` sits in (``<checkout>/src/imagefolder_lmdb``). Neither (a package copied
    without its workflow): the wheel's place, so Snakemake's error names the Snakefile it misses; the
    reader, which needs no workflow, still imports."""
    inside, checkout = package / "workflow", package.parents[1]
    for folder in (inside, checkout):
        if (folder / "Snakefile").is_file() and (folder / "rules" / "common.smk").is_file():
            return folder
    return inside


#: The packaged workflow: its Snakefile is what a host workflow's ``module`` may name, too.
WORKFLOW = workflow_folder()
SNAKEFILE = WORKFLOW / "Snakefile"
#: Profiles shipped with the workflow: ``default`` (always applied) and ``slurm`` (``--profile slurm``).
PROFILES = WORKFLOW / "profiles"
