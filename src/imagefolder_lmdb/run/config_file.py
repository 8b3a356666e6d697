# SPDX-License-Identifier: MIT
"""The config file Snakemake reads, as YAML: written into the work folder for SOURCE OUTDIR, read
for what a user's ``--configfile`` run produces and where its folders are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from imagefolder_lmdb.run.launch import ConvertError
from imagefolder_lmdb.run.outputs import SplitOutputs, outputs_of
from imagefolder_lmdb.work.paths import RunPaths


def write_config(config: dict[str, Any], path: Path) -> Path:
    """``config`` as YAML at ``path``, replaced whole (a rerun of the same command writes the same)."""
    import yaml

    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.incomplete")
    partial.write_text(yaml.safe_dump(config, sort_keys=False))
    partial.replace(path)
    return path


def config_outputs(configfile: Path) -> dict[str, SplitOutputs]:
    """The final files a config file's run produces (its ``results`` folder, default ``results``)."""
    import yaml

    try:
        config = yaml.safe_load(configfile.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConvertError(f"--configfile {configfile}: cannot read it as YAML: {exc}", 2) from exc
    splits = config.get("splits") if isinstance(config, dict) else None
    if not isinstance(splits, dict):
        return {}  # the workflow itself says what is missing
    return outputs_of(str(config.get("results") or "results"), list(splits))


def configfile_folders(configfile: Path, splits: list[str]) -> list[tuple[Any, list[str]]]:
    """A config file's run's folders and ``splits`` (none where the file cannot be read)."""
    import yaml

    try:
        config = yaml.safe_load(configfile.read_text()) or {}
        return [(RunPaths(str(config.get("results") or "results"), str(config.get("work") or "work")), splits)]
    except (OSError, yaml.YAMLError, AttributeError):
        return []
