"""The smaller points of issue 43, each where it can fail: rates from encoding time only, ratios to
two decimals, a line for images re-encoded from another format, a fix shared by failing shards said
once, class names under the bars of classes.png, init-config's five choices, and the closing words
of an interrupted run."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image

from imagefolder_lmdb.board.logger_plugin import closing_lines
from imagefolder_lmdb.board.progress import Board, SplitState, how_far, interruption_lines
from imagefolder_lmdb.board.summary import kept_bytes_line, ratio_words, speed_line
from imagefolder_lmdb.steps.report_split import HEIGHT, LABEL_BAND, MARGIN, NAMED_BARS, WIDTH, class_histogram
from imagefolder_lmdb.work.paths import RunPaths


def progress_file(paths: RunPaths, shard: str, done: int, started: float, updated: float) -> None:
    path = Path(paths.part_report("train", shard)).with_suffix(".progress")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"done": done, "bad": 0, "total": done, "started": started, "updated": updated}))


def listed_split(tmp_path: Path, images: int) -> tuple[RunPaths, SplitState]:
    paths = RunPaths(str(tmp_path / "out"), str(tmp_path / "work"))
    counts = Path(paths.counts("train"))
    counts.parent.mkdir(parents=True)
    counts.write_text(json.dumps({"images": images}))
    return paths, SplitState("train", paths, stage="encoding")


def test_the_rate_counts_encoding_time_only(tmp_path: Path) -> None:
    """Two shards of 80 images, each encoded in 0.5 s, the second after a wait of 100 s (another
    split's class list, a free core): 160 images in 1 s of encoding, not in 101 s."""
    paths, state = listed_split(tmp_path, 200)
    progress_file(paths, "00000", 80, 1000.0, 1000.5)
    progress_file(paths, "00001", 80, 1100.0, 1100.5)
    state.refresh()
    assert state.rate() == 160.0
    assert state.line() == "train: 160/200 images, 160 img/s, ETA 0:00, 0 bad (encoding)"
    progress_file(paths, "00001", 80, 1000.2, 1000.6)  # two jobs at once: 0.6 s of encoding
    state.refresh()
    assert round(state.rate() or 0) == round(160 / 0.6)


def test_ratios_have_two_decimals() -> None:
    assert ratio_words({"stored_to_source_ratio": 1.33333}) == " (1.33x)"
    assert ratio_words({"stored_to_source_ratio": None}) == ""


def report(storage: dict[str, int], reencode: str = "auto", ratio: float = 1.1) -> dict:
    encode = {"reencode": reencode, "quality": 95}
    return {
        "storage": storage,
        "images": sum(storage.values()),
        "stored_to_source_ratio": ratio,
        "settings": {"encode": encode},
    }


def test_images_reencoded_from_another_format_get_a_line_with_the_setting_that_keeps_them() -> None:
    [line] = kept_bytes_line(report({"passthrough": 90, "reencoded:not-jpeg": 10}))
    assert line == (
        "  re-encoded: 10 of 100 images were no RGB JPEG, stored as JPEG q95 "
        "(--set encode.reencode=never keeps every file as it is)"
    )
    [grown] = kept_bytes_line(report({"reencoded:not-jpeg": 4}, ratio=2.345))
    assert "stored as JPEG q95, the file 2.35x its source (" in grown
    assert kept_bytes_line(report({"passthrough": 9, "reencoded:resized": 3})) == []  # a setting's doing
    assert kept_bytes_line(report({"stored-as-is": 4}, reencode="never")) == []


def test_a_fix_shared_by_failing_shards_is_said_once_last() -> None:
    fix = "Fix or remove the files named above and run the same command again."
    messages = [
        f"1 bad image in this shard:\n  a.jpg: broken\n{fix}",
        f"1 bad image in this shard:\n  b.jpg: cut\n{fix}",
    ]
    lines = closing_lines(["l1", "l2"], messages)
    assert lines[0] == "full logs: l1, l2" and lines[-1] == fix and lines.count(fix) == 1
    assert "  a.jpg: broken" in lines and "  b.jpg: cut" in lines
    alone = closing_lines([], ["something else\nits own fix"])
    assert alone == ["something else", "its own fix"]


def ink_under_each_bar(path: Path, classes: int) -> list[bool]:
    pixels = np.asarray(Image.open(path).convert("L"))
    bar = (WIDTH - 2 * MARGIN) / classes
    band = pixels[HEIGHT - MARGIN + 4 : HEIGHT - MARGIN + LABEL_BAND - 10]
    return [bool((band[:, int(MARGIN + k * bar) : int(MARGIN + (k + 1) * bar)] < 128).any()) for k in range(classes)]


def test_class_names_are_under_the_bars_up_to_some_sixty_classes(tmp_path: Path) -> None:
    for classes in (3, NAMED_BARS):
        class_histogram({f"n{k:08d}": k + 1 for k in range(classes)}, str(tmp_path / "named.png"), "train")
        assert all(ink_under_each_bar(tmp_path / "named.png", classes)), classes
    class_histogram({f"n{k:08d}": 1 for k in range(NAMED_BARS + 1)}, str(tmp_path / "many.png"), "train")
    assert Image.open(tmp_path / "many.png").height == HEIGHT  # as before: the caption names min and max


def test_init_config_without_a_name_lists_the_five() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "imagefolder_lmdb.cli", "init-config"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 2
    listed = result.stderr.split("give NAME, one of:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in listed] == ["folder", "imagenet", "kaggle", "wds", "parquet"]


def finished_shard(paths: RunPaths, shard: str, images: int) -> None:
    """A shard whose encode job finished: its progress file at its total, its report written last."""
    progress_file(paths, shard, images, 1000.0, 1001.0)
    Path(paths.part_report("train", shard)).write_text("{}")


def test_an_interrupted_run_says_how_far_each_split_got(tmp_path: Path) -> None:
    """Each split's images in finished shards: what a rerun does not encode again (issue 57)."""
    paths, train = listed_split(tmp_path, 200)
    finished_shard(paths, "00000", 58)
    progress_file(paths, "00001", 40, 1000.0, 1001.0)  # running when interrupted: encoded again
    train.refresh()
    val = SplitState("val", paths)  # never listed
    merging = SplitState("test", paths, stage="merging", total=40)
    assert interruption_lines([train, val, merging], "SIGTERM") == [
        "interrupted by SIGTERM: train 58/200 images encoded and kept; val not started; "
        "test 40/40 images encoded, stopped while merging.",
        "Run the same command again: it goes on from there.",
    ]


def test_an_interrupted_shard_counts_for_nothing(tmp_path: Path) -> None:
    """Shards running, none finished: 0 kept, however far each got (it said 1,049/1,170 when no shard
    had finished, and the rerun started at 0); the board's last line says the same."""
    paths, train = listed_split(tmp_path, 200)
    progress_file(paths, "00000", 90, 1000.0, 1001.0)
    progress_file(paths, "00001", 95, 1000.0, 1001.0)
    train.refresh()
    assert interruption_lines([train])[0] == "interrupted: train 0/200 images encoded and kept."
    train.stage = "interrupted while encoding"
    assert train.line().startswith("train: 0/200 images")


def test_a_shard_snakemake_has_not_seen_finish_is_not_kept(tmp_path: Path) -> None:
    """Its report written, its job not yet recorded as finished (Snakemake's mark of an incomplete
    job goes only then, and a rerun redoes a job so marked): not kept until the board hears the end."""
    paths, train = listed_split(tmp_path, 200)
    board = Board(io.StringIO(), terminal=False)
    board.splits["train"] = train
    board.job("encode_shard", "train", shard="00000")
    finished_shard(paths, "00000", 100)  # the job wrote its report, and is still running for Snakemake
    train.refresh()
    assert how_far(train) == "train 0/200 images encoded and kept"
    board.job("encode_shard", "train", finished=True, shard="00000")
    train.refresh()
    assert how_far(train) == "train 100/200 images encoded and kept"


def test_the_summary_rate_counts_encoding_time_only(tmp_path: Path) -> None:
    """Two encode jobs of 5 s each (start-up, waiting) that encoded for 0.25 s each: 160 images make
    320 img/s per job slot, not 16."""
    paths, _ = listed_split(tmp_path, 160)
    for shard, start in (("00000", 1000.0), ("00001", 1002.0)):
        progress_file(paths, shard, 80, start, start + 0.25)
        benchmark = Path(paths.benchmark("encode_shard", "train", shard))
        benchmark.parent.mkdir(parents=True, exist_ok=True)
        benchmark.write_text("s\th:m:s\n5.0\t0:00:05\n")
    line = speed_line({"images": 160}, paths, "train", 2)
    assert line == "  time: 10.0 s of jobs, of which encoding 10.0 s in 2 shards (320 img/s per job slot)"
