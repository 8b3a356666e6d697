"""Record locations (meta/locations) of the workflow's own output: every record located, read by
offset byte-equal to what LMDB holds (tests/unit/test_record_locations.py: every shape of tree, files the
offsets do not fit)."""

from __future__ import annotations

import lmdb
import pytest

from support.datasets import assert_offsets_give_lmdb_bytes, assert_reader_reads_every_record, stored_records
from support.workflow import Converted

pytestmark = [
    pytest.mark.usefixtures("fresh_envs"),  # the test opens its files afresh
]


def test_the_workflow_output_is_located_and_reads_right(converted: Converted) -> None:
    path = converted.lmdb
    records, _, document = stored_records(path)
    with lmdb.open(str(path), subdir=False, readonly=True, lock=False) as env:
        assert document["locations"]["txnid"] == env.info()["last_txnid"]
    assert assert_offsets_give_lmdb_bytes(path) == len(records), "ImageNet-sized JPEGs are all on overflow pages"
    ds = assert_reader_reads_every_record(path, by_offset=True)
    assert all(ds.check_crc(i) for i in range(len(ds)))
