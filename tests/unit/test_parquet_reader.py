"""The Parquet source's reader (src/imagefolder_lmdb/sources/parquet_rows.py) on its own: threads sharing row groups
read every row right and load each row group once; a null image is a bad image; pyarrow stays
unloaded until a Parquet source is read."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from imagefolder_lmdb.sources.parquet_rows import ParquetReader
from imagefolder_lmdb.work.source_locations import ParquetLocation
from support import REPO
from support.images import jpeg_bytes
from support.parquet import Row, write_hf_parquet, write_plain_parquet

ROWS, GROUP = 40, 6


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("parquet")
    hub = [Row(jpeg_bytes(i), f"{i}.JPEG", 0) for i in range(ROWS)]
    plain = [Row(jpeg_bytes(ROWS + i), None, 0) for i in range(ROWS)]
    return [
        write_hf_parquet(folder / "a.parquet", hub, ["x"], GROUP),
        write_plain_parquet(folder / "b.parquet", plain, "image", "label", GROUP),
    ]


def locations() -> list[ParquetLocation]:
    return [ParquetLocation(f, i // GROUP, i % GROUP) for f in (0, 1) for i in range(ROWS)]


def expected(location: ParquetLocation) -> bytes:
    return jpeg_bytes(location.parquet * ROWS + location.row_group * GROUP + location.row)


@pytest.mark.parametrize("cache_bytes", [0, 1 << 30])
def test_threads_read_every_row_and_share_row_group_loads(files: list[Path], cache_bytes: int) -> None:
    reader = ParquetReader([str(f) for f in files], "image", cache_bytes=cache_bytes)
    loads: list[tuple[int, int]] = []
    load = reader._load
    reader._load = lambda number, group: loads.append((number, group)) or load(number, group)  # type: ignore[method-assign]
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda location: reader.read("", location), locations()))
    assert got == [expected(location) for location in locations()]
    if cache_bytes:  # with room for all of them, no row group is read twice
        assert sorted(loads) == sorted(set(loads)) and len(loads) == 2 * -(-ROWS // GROUP)
    reader.close()


def test_messages_name_the_file_and_its_row_and_sizes_come_from_the_footer(files: list[Path]) -> None:
    reader = ParquetReader([str(f) for f in files], "image")
    location = ParquetLocation(1, 2, 3)
    assert reader.describe("x/b-15", location) == f"{files[1]}, row 15 (counted from 0; row group 2), sample x/b-15"
    size = reader.source_size("x/b-15", location)
    assert size is not None and 0.5 < size / len(expected(location)) < 2


def test_a_null_image_is_a_bad_image(tmp_path: Path) -> None:
    file = write_hf_parquet(tmp_path / "n.parquet", [Row(jpeg_bytes(1), "a", 0), Row(None, "b.JPEG", 0)], ["x"], 2)
    with pytest.raises(ValueError, match="no image bytes") as caught:
        ParquetReader([str(file)], "image").read("x/b.JPEG", ParquetLocation(0, 0, 1))
    assert type(caught.value) is ValueError  # what the image policy reports as a bad image


def test_importing_the_sources_leaves_pyarrow_unloaded() -> None:
    # rules/common.smk imports sources while Snakemake parses the Snakefile: every run pays for it
    code = "import sys, imagefolder_lmdb.sources; print('pyarrow' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
