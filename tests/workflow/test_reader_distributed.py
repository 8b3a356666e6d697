"""The reader under torch.distributed: two gloo ranks, each with a DataLoader worker, split the
dataset with DistributedSampler."""

from __future__ import annotations

import datetime
import json
import os
import zlib
from pathlib import Path

import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, DistributedSampler

from imagefolder_lmdb.reader import LMDBDataset
from support.workflow import Converted

WORLD_SIZE = 2


def collate_bytes(batch: list[tuple[bytes, int]]) -> list[tuple[bytes, int]]:
    return batch


def rank_main(rank: int, dataset_path: str, rendezvous: str, results: str) -> None:
    """One rank: read its share through DistributedSampler and a DataLoader worker, record what it
    read (index, label, CRC of the bytes), and gather every rank's indices on every rank."""
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # loopback: the test needs no network
    dist.init_process_group(
        "gloo",
        init_method=f"file://{rendezvous}",
        rank=rank,
        world_size=WORLD_SIZE,
        timeout=datetime.timedelta(seconds=120),
    )
    try:
        ds = LMDBDataset(dataset_path, decode="bytes")
        sampler = DistributedSampler(ds, shuffle=False, drop_last=False)
        loader = DataLoader(ds, batch_size=4, sampler=sampler, num_workers=1, collate_fn=collate_bytes)
        samples = [sample for batch in loader for sample in batch]
        indices = list(sampler)
        read = [
            {"index": index, "target": target, "crc32": zlib.crc32(data)}
            for index, (data, target) in zip(indices, samples, strict=True)
        ]
        gathered: list[list[int] | None] = [None] * WORLD_SIZE
        dist.all_gather_object(gathered, indices)
        Path(results, f"rank{rank}.json").write_text(json.dumps({"read": read, "gathered": gathered}))
    finally:
        dist.destroy_process_group()


def test_distributed_sampler_ranks_read_disjoint_shares(converted: Converted, tmp_path: Path) -> None:
    rendezvous = tmp_path / "rendezvous"
    mp.spawn(rank_main, args=(str(converted.lmdb), str(rendezvous), str(tmp_path)), nprocs=WORLD_SIZE, join=True)
    ds = LMDBDataset(converted.lmdb)
    shares = [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in range(WORLD_SIZE)]
    indices = [[record["index"] for record in share["read"]] for share in shares]
    assert all(indices), "every rank read something"
    assert not set(indices[0]) & set(indices[1]), "the ranks' shares overlap"
    assert sorted(indices[0] + indices[1]) == list(range(len(ds)))
    for share in shares:
        assert share["gathered"] == indices, "all_gather_object saw the same shares"
        for record in share["read"]:
            assert record["target"] == ds.targets[record["index"]]
            assert record["crc32"] == int(ds.checksums[record["index"]]), f"rank read wrong bytes: {record}"
