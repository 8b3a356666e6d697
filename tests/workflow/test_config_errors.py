"""Config mistakes through the real snakemake CLI: every problem of a config reported at once, one
line each (key, value, fix), before any job runs, with nothing printed around them but Snakemake's
own line saying where the error came from; and the config faults that used to cost a wrong or a
wasted run (a split written twice, the results inside the source, more shards than images, a
classes file with a byte order mark). The checks as functions: tests/unit/test_config_check.py."""

from __future__ import annotations

import re
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest

from imagefolder_lmdb.reader import LMDBDataset, close_all_envs
from support.workflow import Run, run_snakemake, write_config

#: What Snakemake prints of its own around the lines: its workflow profile (when it finds one beside
#: the Snakefile) and the line naming the error's class and where the check was called.
PROFILE_LINE = re.compile(r"Using workflow specific profile \S+ for setting default command line arguments\.")
HEADER_LINE = re.compile(r'ConfigError in file "\S+/rules/common\.smk", line \d+:')


def problem_lines(run: Run) -> list[str]:
    """The lines after Snakemake's own; fails unless the run failed and printed nothing else."""
    assert run.returncode != 0
    # stdout then stderr: a dry run prints the error to stdout, the profile line to stderr
    lines = [line for line in run.output.splitlines() if not PROFILE_LINE.fullmatch(line)]
    assert lines and HEADER_LINE.fullmatch(lines[0]), run.output
    return lines[1:]


def run_config(workdir: Path, splits: dict[str, dict[str, Any]], *args: str, **sections: Any) -> Run:
    workdir.mkdir(exist_ok=True)
    return run_snakemake(workdir, "--configfile", str(write_config(workdir, splits, **sections)), *args)


def assert_nothing_ran(workdir: Path) -> None:
    assert not (workdir / "work").exists() and not (workdir / "results").exists()


def mistakes(tree: Path, workdir: Path) -> dict[str, tuple[dict[str, Any], dict[str, Any], list[str]]]:
    """Each kind of mistake: its splits, its other sections, and the lines it gets."""
    val_tar = workdir / "ILSVRC2012_img_val.tar"
    tarfile.open(val_tar, "w").close()
    cwd = workdir.resolve()
    return {
        "typo under a split": (
            {"train": {"source": str(tree), "shard": 4}},
            {},
            ["config key splits.train.shard: unknown key (value 4); did you mean shards?"],
        ),
        "typo at the top level": (
            {},
            {"verfy": {"sample": 8}},
            ["config key verfy: unknown key (value {'sample': 8}); did you mean verify?"],
        ),
        "wrong type": (
            {},
            {"encode": {"quality": "high"}},
            ["config key encode.quality: 'high' is the wrong type; set an integer from 1 to 100."],
        ),
        "two missing paths": (
            {"test": {"source": "data/test"}, "extra": {"source": "data/extra.tar"}},
            {},
            [
                f"config key splits.test.source: 'data/test' does not exist (relative paths are taken from {cwd}). "
                "The first folder of it that does not exist: 'data'.",
                f"config key splits.extra.source: 'data/extra.tar' does not exist (relative paths are taken from "
                f"{cwd}). The first folder of it that does not exist: 'data'.",
            ],
        ),
        "a layout's required key missing": (
            {"val": {"source": str(val_tar), "layout": "ilsvrc-val"}},
            {},
            [
                "config key splits.val.devkit: layout ilsvrc-val needs the labels: set devkit "
                "(ILSVRC2012_devkit_t12.tar.gz) or val_labels (LOC_val_solution.csv)."
            ],
        ),
    }


KINDS = [
    "typo under a split",
    "typo at the top level",
    "wrong type",
    "two missing paths",
    "a layout's required key missing",
]


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_of_mistake_is_one_line_each(image_tree: Path, tmp_path: Path, kind: str) -> None:
    splits, sections, lines = mistakes(image_tree, tmp_path)[kind]
    run = run_config(tmp_path, splits or {"train": {"source": str(image_tree)}}, **sections)
    assert problem_lines(run) == lines
    assert_nothing_ran(tmp_path)


def test_every_mistake_is_reported_in_one_run(image_tree: Path, tmp_path: Path) -> None:
    splits: dict[str, Any] = {}
    sections: dict[str, Any] = {}
    expected: list[str] = []
    for kind_splits, kind_sections, lines in mistakes(image_tree, tmp_path).values():
        splits.update(kind_splits)
        sections.update(kind_sections)
        expected += lines
    run = run_config(tmp_path, splits, "-n", **sections)
    lines = problem_lines(run)
    assert sorted(lines) == sorted(expected)
    assert lines == [  # in the order the keys are written: the splits, then verfy, then encode
        *[line for line in expected if "splits." in line],
        *[line for line in expected if "verfy" in line],
        *[line for line in expected if "encode." in line],
    ]
    assert_nothing_ran(tmp_path)


# --------------------------------------------------------------------------------------------------
# Issue 21's config faults, each as a user meets it
# --------------------------------------------------------------------------------------------------


def test_a_split_written_twice_is_refused_naming_both_lines(image_tree: Path, tmp_path: Path) -> None:
    # a copied block whose name was not changed: YAML keeps the second and drops the first in silence
    config = tmp_path / "config.yaml"
    config.write_text(
        "splits:\n"
        "  train:\n"
        f"    source: {image_tree}\n"
        "    shards: 2\n"
        "  train:\n"
        f"    source: {image_tree}\n"
        "    shards: 3\n"
    )
    run = run_snakemake(tmp_path, "--configfile", str(config))
    assert problem_lines(run) == [
        f"config file {config}: key splits.train is given twice, at lines 2 and 5 (YAML keeps only the second, "
        "dropping the first in silence); remove or rename one."
    ]
    assert_nothing_ran(tmp_path)


def test_results_inside_the_source_are_refused_before_any_job(tree_copy: Path, tmp_path: Path) -> None:
    # the first run would be right; the next one would convert the results folder as one more class
    workdir = tmp_path / "run"
    results = tree_copy / "lmdb"
    run = run_config(workdir, {"train": {"source": str(tree_copy)}}, results=str(results))
    assert problem_lines(run) == [
        f"config key results: {str(results)!r} lies inside splits.train.source {str(tree_copy)!r}: a later run "
        "would read the outputs as images of the source; set results to a folder outside it."
    ]
    assert not results.exists() and not (workdir / "work").exists()


def test_work_inside_the_source_through_a_link_is_refused(tree_copy: Path, tmp_path: Path) -> None:
    workdir = tmp_path / "run"
    workdir.mkdir()
    (workdir / "data").symlink_to(tree_copy)
    run = run_config(workdir, {"train": {"source": "data"}}, work=str(tree_copy / "work"))
    assert problem_lines(run) == [
        f"config key work: {str(tree_copy / 'work')!r} lies inside splits.train.source 'data' ({tree_copy}): a "
        "later run would read the outputs as images of the source; set work to a folder outside it."
    ]
    assert not (tree_copy / "work").exists()


def test_more_shards_than_images_stops_before_the_encode_jobs(image_tree: Path, tmp_path: Path) -> None:
    tree = tmp_path / "twelve"
    for image in sorted(image_tree.glob("*/*.JPEG"))[:12]:
        (tree / image.parent.name).mkdir(parents=True, exist_ok=True)
        shutil.copy(image, tree / image.parent.name / image.name)
    workdir = tmp_path / "run"
    run = run_config(workdir, {"train": {"source": str(tree), "shards": 100}})  # a DAG of 100 encode jobs
    assert run.returncode != 0
    assert (
        f"{tree}: config key splits.train.shards: 100 is more than the 12 images the source holds (88 encode "
        "jobs would have nothing to do); set shards: 12 or fewer." in run.output
    )
    assert "rule encode_shard:" not in run.output and not (workdir / "work" / "train" / "manifest.tsv").exists()
    fixed = run_config(workdir, {"train": {"source": str(tree), "shards": 4}}).check()  # the same folders
    assert fixed.output.count("rule encode_shard:") == 4
    close_all_envs()
    assert len(LMDBDataset(workdir / "results" / "train.lmdb")) == 12


def test_more_shards_than_expected_images_is_refused_at_once(image_tree: Path, tmp_path: Path) -> None:
    run = run_config(tmp_path, {"train": {"source": str(image_tree), "shards": 10000, "expected_images": 40}})
    assert problem_lines(run) == [
        "config key splits.train.shards: 10000 is more than expected_images (40): a shard holds at least one "
        "image; set shards: 40 or fewer."
    ]
    assert_nothing_ran(tmp_path)


def test_a_classes_file_with_a_byte_order_mark_converts(image_tree: Path, tmp_path: Path) -> None:
    # Windows' Notepad (before 2019) and some spreadsheets save UTF-8 with a BOM in front of the first name
    classes = sorted(p.name for p in image_tree.iterdir())[:2]
    listed = tmp_path / "classes.txt"
    listed.write_bytes("\ufeff".encode() + "\n".join(classes).encode() + b"\n")
    workdir = tmp_path / "run"
    run_config(workdir, {"train": {"source": str(image_tree), "shards": 1}}, classes=str(listed)).check()
    close_all_envs()
    assert LMDBDataset(workdir / "results" / "train.lmdb").classes == classes
