"""ElasticDistributedSampler under real DDP processes (issue 32): a job of four gloo ranks reads the
converted file through StatefulDataLoader with two workers each, saves its loaders' states after a
few steps and stops; a job of three ranks takes the sampler's state out of them
(sampler_state_from_loader), loads it into fresh loaders with one worker each and reads the rest of
the epoch: every record once, the last step padded as DistributedSampler pads."""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from imagefolder_lmdb import ElasticDistributedSampler, LMDBDataset, sampler_state_from_loader
from imagefolder_lmdb.reader import checksum
from support.workflow import Converted

#: torchdata 0.11 calls torch.set_vital, which torch 2.14 deprecates, at every iterator it starts.
pytestmark = pytest.mark.filterwarnings("ignore:'set_vital' is deprecated:UserWarning")

BATCH = 3
STEPS = 2  # steps the first job takes before it is stopped
SEED = 32


def loader_for(ds: LMDBDataset, sampler: ElasticDistributedSampler, workers: int) -> Any:
    from torchdata.stateful_dataloader import StatefulDataLoader

    return StatefulDataLoader(ds, batch_size=BATCH, sampler=sampler, num_workers=workers)


def rank_main(rank: int, world: int, phase: str, dataset_path: str, folder: str) -> None:
    """One rank of either job: ``first`` reads STEPS batches and saves its loader's state; ``second``
    loads a state the first job saved (rank ``rank % 4``'s) and reads to the end of the epoch."""
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # loopback: the test needs no network
    rendezvous = f"file://{Path(folder, f'rendezvous-{phase}')}"
    timeout = datetime.timedelta(seconds=120)
    dist.init_process_group("gloo", init_method=rendezvous, rank=rank, world_size=world, timeout=timeout)
    try:
        ds = LMDBDataset(dataset_path, decode="bytes", transform=checksum)  # a sample: its record's CRC-32
        sampler = ElasticDistributedSampler(ds, seed=SEED)  # rank and world size from the process group
        sampler.set_epoch(1)
        if phase == "first":
            loader = loader_for(ds, sampler, workers=2)
            batches = iter(loader)
            read = [next(batches) for _ in range(STEPS)]
            torch.save(loader.state_dict(), Path(folder, f"loader-rank{rank}.pt"))  # as a checkpoint would
        else:
            saved = torch.load(Path(folder, f"loader-rank{rank % 4}.pt"), weights_only=True)
            sampler.load_state_dict(sampler_state_from_loader(saved))  # num_workers 2 -> 1: not the loader's state
            read = list(loader_for(ds, sampler, workers=1))
        samples = [
            [crc, label] for crcs, labels in read for crc, label in zip(crcs.tolist(), labels.tolist(), strict=True)
        ]
        Path(folder, f"{phase}-rank{rank}.json").write_text(json.dumps(samples))
        dist.barrier()
    finally:
        dist.destroy_process_group()


def job(world: int, phase: str, dataset: Path, folder: Path) -> list[list[list[int]]]:
    """Run one job of ``world`` processes; what each rank read, as (CRC-32, label) pairs."""
    mp.spawn(rank_main, args=(world, phase, str(dataset), str(folder)), nprocs=world, join=True)
    return [json.loads(Path(folder, f"{phase}-rank{rank}.json").read_text()) for rank in range(world)]


@pytest.mark.slow  # a minute or more: handed out early (support/scheduling.py)
def test_ddp_job_resumes_on_fewer_processes_and_workers(converted: Converted, tmp_path: Path) -> None:
    ds = LMDBDataset(converted.lmdb)
    index_of = {int(crc): index for index, crc in enumerate(ds.checksums)}
    assert len(index_of) == len(ds), "every record tells itself apart"

    def indices(share: list[list[int]]) -> list[int]:
        for crc, label in share:
            assert ds.targets[index_of[crc]] == label, "the label of the record read"
        return [index_of[crc] for crc, _ in share]

    first = [indices(share) for share in job(4, "first", converted.lmdb, tmp_path)]
    second = [indices(share) for share in job(3, "second", converted.lmdb, tmp_path)]
    reference = ElasticDistributedSampler(ds, num_replicas=1, rank=0, seed=SEED)
    reference.set_epoch(1)
    epoch = list(reference)

    seen = [index for step in zip(*first, strict=True) for index in step]
    rest = [index for step in zip(*second, strict=True) for index in step]
    consumed = 4 * STEPS * BATCH
    assert seen == epoch[:consumed], "the first job: the start of the epoch's permutation, dealt in turn"
    left = len(ds) - consumed
    assert rest[:left] == epoch[consumed:], "the second job: the rest of the epoch, each record once"
    assert rest[left:] == epoch[: len(rest) - left] and len(rest) - left < 3, "then padding, as DistributedSampler"
    assert sorted(seen + rest[:left]) == list(range(len(ds)))
