"""Mid-epoch resume with torchdata's StatefulDataLoader (pinned in requirements-dev.txt): a job
pre-empted halfway through an epoch saves the loader's ``state_dict``, a new loader built from it
yields exactly the samples the first had not yet given, in the order the epoch would have had."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
import torch
from torchdata.stateful_dataloader import StatefulDataLoader

from imagefolder_lmdb.reader import LMDBDataset, checksum
from support.workflow import Converted

#: torchdata 0.11 calls torch.set_vital, which torch 2.14 deprecates, at every iterator it starts.
pytestmark = pytest.mark.filterwarnings("ignore:'set_vital' is deprecated:UserWarning")

BATCH = 4
SEED = 17


def shuffled_loader(ds: LMDBDataset, workers: int) -> StatefulDataLoader:
    """The loader a training script builds, with a seeded shuffle (each run of the job builds it anew)."""
    return StatefulDataLoader(
        ds, batch_size=BATCH, shuffle=True, generator=torch.Generator().manual_seed(SEED), num_workers=workers
    )


def record_indices(batches: Iterable[tuple[torch.Tensor, torch.Tensor]], ds: LMDBDataset) -> list[int]:
    """The record each sample came from, told by the CRC-32 of its stored bytes (the transform
    below), with its label checked against the dataset's."""
    index_of = {int(crc): index for index, crc in enumerate(ds.checksums)}
    indices = []
    for crcs, labels in batches:
        for crc, label in zip(crcs.tolist(), labels.tolist(), strict=True):
            indices.append(index_of[crc])
            assert label == ds.targets[indices[-1]]
    return indices


@pytest.mark.parametrize("workers", [0, 2])
def test_stateful_dataloader_resumes_mid_epoch(converted: Converted, workers: int) -> None:
    ds = LMDBDataset(converted.lmdb, decode="bytes", transform=checksum)  # a sample: its record's CRC-32
    assert len(set(ds.checksums.tolist())) == len(ds), "every record tells itself apart"
    whole_epoch = record_indices(shuffled_loader(ds, workers), ds)
    assert sorted(whole_epoch) == list(range(len(ds))) and whole_epoch != sorted(whole_epoch)

    first = shuffled_loader(ds, workers)
    batches = iter(first)
    half = len(first) // 2
    seen = record_indices((next(batches) for _ in range(half)), ds)
    state = first.state_dict()
    del batches, first  # the pre-empted job is gone, its workers with it

    resumed = shuffled_loader(ds, workers)
    resumed.load_state_dict(state)
    rest = record_indices(resumed, ds)
    assert len(seen) == half * BATCH and not set(seen) & set(rest)
    assert sorted(seen + rest) == list(range(len(ds))), "every record once in the epoch"
    assert seen + rest == whole_epoch, "the rest in the order the uninterrupted epoch gives"
