"""The caller's Snakemake options after ``--`` (run/snakemake_options.py): each path option's paths
taken from the caller's folder, whatever way it is written; what convert sets itself refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from imagefolder_lmdb.run.launch import ConvertError
from imagefolder_lmdb.run.snakemake_options import caller_options


@pytest.mark.parametrize(
    ("given", "passed"),
    [
        (["--report", "r.html", "-n"], ["--report", "{here}/r.html", "-n"]),
        (["--report"], ["--report", "{here}/report.html"]),  # Snakemake's own name, here
        (["--report", "--dry-run"], ["--report", "{here}/report.html", "--dry-run"]),
        (["--report=x/r.zip"], ["--report={here}/x/r.zip"]),
        (["--cm", "a", "b", "-p"], ["--cm", "{here}/a", "{here}/b", "-p"]),
        (["--conda-prefix", "/abs/envs"], ["--conda-prefix", "/abs/envs"]),
        (["--report", "s3://bucket/r.html"], ["--report", "s3://bucket/r.html"]),
        (["--config", "a=1", "--jobs", "2", "-S", "-c4"], ["--config", "a=1", "--jobs", "2", "-S", "-c4"]),
    ],
)
def test_paths_are_taken_from_the_callers_folder(
    given: list[str], passed: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert caller_options(given, cli=True) == [token.format(here=tmp_path) for token in passed]


@pytest.mark.parametrize(
    ("given", "words"),
    [
        (["-d", "x"], "Snakemake's -d (--directory) after --: convert runs Snakemake in the work folder, which --work"),
        (["-nd", "x"], "Snakemake's -nd (--directory) after --"),
        (["--directory=x"], "Snakemake's --directory after --"),
        (["--configfiles", "a.yaml"], "give keys with --set KEY=VALUE, or a whole config file as convert's own"),
        (["-s", "Snakefile"], "convert runs the workflow it ships"),
        (["--workflow-profile", "p"], "give yours with --profile"),
        (["--stats", "s.json"], "Snakemake 9 has no --stats"),
        (["--rep", "r.html"], "Snakemake option --rep: write it in full (--report or"),
    ],
)
def test_what_convert_sets_itself_is_refused_with_the_reason(given: list[str], words: str) -> None:
    with pytest.raises(ConvertError, match=words.replace("(", r"\(").replace(")", r"\)")) as refused:
        caller_options(given, cli=True)
    assert refused.value.returncode == 2 and len(refused.value.lines) == 1


def test_convert_calls_name_its_parameters() -> None:
    with pytest.raises(ConvertError, match=r"--directory in snakemake_args: .*which work=DIR chooses"):
        caller_options(["--directory", "x"], cli=False)
