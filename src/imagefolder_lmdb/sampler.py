# SPDX-License-Identifier: MIT
"""ElasticDistributedSampler: one global permutation per epoch, dealt to the ranks in turn, whose
state is the number of the epoch's samples the whole job consumed, so a job resumes mid-epoch on any
number of GPUs (issue 32).

An epoch is the permutation ``P = f(seed, epoch)`` of ``range(len(dataset))``, the same whatever the
world size. Rank ``r`` of ``W`` draws positions ``start + r, start + r + W, ...`` of it, as
``DistributedSampler`` deals its own: once every rank drew ``k`` indices the job consumed exactly
``P[:start + k * W]``. A state records ``start + k * W`` (``consumed``); a job of any size continues
from there. Padding and ``drop_last`` are ``DistributedSampler``'s, applied to what is left of the
epoch: without ``drop_last`` the last step is filled with indices from the epoch's beginning (seen
twice, as DistributedSampler pads); with it, the last ``< W`` indices are left out.

An epoch is never dealt twice from one state: a state taken once a rank drew its last index (after
the last batch, or ``drop_last``'s leftovers) records the whole epoch (``consumed == len``), and a
state with nothing left for the new world size resumes to an empty rest, as torchdata's
StatefulDistributedSampler does; ``set_epoch`` of another epoch then starts that one whole.

The permutation comes from a fixed 64-bit hash (splitmix64) of (seed, epoch, index), sorted with
numpy: the same order on every machine and with every torch or numpy version. Torch only; torchdata
(``StatefulDataLoader``) is optional and never imported here.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sized
from typing import Any

import numpy as np
import torch.distributed as dist
from torch.utils.data import Sampler

__all__ = ["ElasticDistributedSampler", "sampler_state_from_loader"]

_MASK = (1 << 64) - 1
#: splitmix64's increment (the golden ratio in 64 bits): keys are ``i * _GAMMA + stream key``, then mixed.
_GAMMA = 0x9E3779B97F4A7C15
#: The fields of a state that fix the permutation: a state loads only into a sampler that has them equal.
_ORDER_FIELDS = ("dataset_size", "seed", "shuffle", "block_size", "window")


def _mix(value: int) -> int:
    """splitmix64 on one Python int: a well-spread 64-bit key for a (seed, epoch, stream)."""
    value = (value + _GAMMA) & _MASK
    value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & _MASK
    return value ^ (value >> 31)


def _hash_keys(values: np.ndarray, key: int) -> np.ndarray:
    """splitmix64 of ``values * _GAMMA + key`` for an array (arithmetic wraps mod 2**64, as intended)."""
    x = values.astype(np.uint64) * np.uint64(_GAMMA) + np.uint64(key)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _stream_key(seed: int, epoch: int, stream: int) -> int:
    """The hash key of one random stream of an epoch: records (0), blocks (1), within windows (2)."""
    return _mix(_mix(_mix(seed) + epoch) + stream)


def epoch_permutation(size: int, seed: int, epoch: int, block_size: int | None = None, window: int = 1) -> np.ndarray:
    """The epoch's order of ``range(size)``: a full shuffle, or with ``block_size`` the block-window
    shuffle: blocks of ``block_size`` neighbouring records in a random order, then the records of each
    window of ``block_size * window`` of them in that order shuffled among themselves."""
    records = np.arange(size, dtype=np.int64)
    if block_size is None:
        return np.argsort(_hash_keys(records, _stream_key(seed, epoch, 0)), kind="stable")
    blocks = np.argsort(_hash_keys(np.arange(-(-size // block_size)), _stream_key(seed, epoch, 1)), kind="stable")
    lengths = np.minimum(block_size, size - blocks * block_size)
    starts = np.repeat(blocks * block_size - np.cumsum(lengths) + lengths, lengths)
    in_block_order = starts + np.arange(size)  # the records, block after block in the blocks' order
    # Windows of block_size * window records, so that they stay aligned with batches wherever the
    # shorter last block falls (a window after it holds parts of window + 1 blocks).
    windows = np.arange(size) // (block_size * window)
    keys = _hash_keys(in_block_order, _stream_key(seed, epoch, 2))
    return in_block_order[np.lexsort((keys, windows))]


def _check_state(state: dict[str, Any], expected: dict[str, Any]) -> None:
    """Refuse a state whose epoch is another permutation: a different dataset, seed or shuffle."""
    missing = [name for name in ("epoch", "consumed", *_ORDER_FIELDS) if name not in state]
    if missing:
        raise ValueError(
            f"not an ElasticDistributedSampler state (no {', '.join(missing)}): pass sampler.state_dict(), or "
            "sampler_state_from_loader(loader_state) for a StatefulDataLoader's state"
        )
    differ = [f"{name}={state[name]!r} (this sampler: {expected[name]!r})" for name in _ORDER_FIELDS]
    differ = [line for name, line in zip(_ORDER_FIELDS, differ, strict=True) if state[name] != expected[name]]
    if differ:
        raise ValueError(
            "the saved state is of another order: "
            + ", ".join(differ)
            + "; build the sampler over the same dataset with the settings of the job that saved it"
        )
    if not 0 <= state["consumed"] <= state["dataset_size"]:
        raise ValueError(f"consumed={state['consumed']} is outside the epoch of {state['dataset_size']} samples")


def _revision_entry(revision: int | None) -> dict[str, int]:
    """The revision of a split of revisions a state was saved over; none for a single split file (its
    state as before revisions existed)."""
    return {} if revision is None else {"revision": revision}


def _check_revision(state: dict[str, Any], revision: int | None) -> None:
    """Refuse a state saved over another revision of a split (docs/FORMAT.md, version 5): its indices
    name other images. A state without one was saved over a single split file, which is revision 1 of
    the split its first change makes (the file it kept)."""
    saved = state.get("revision") or 1
    if saved == (revision or 1):
        return
    raise ValueError(
        f"the saved state is of revision={saved} of the split, this dataset reads revision={revision}: its indices "
        f"name other images. Open LMDBDataset(path, revision={saved}) to resume that run, or start the epoch anew"
    )


class ElasticDistributedSampler(Sampler[int]):
    """``DistributedSampler``'s drop-in whose epoch is one permutation dealt to the ranks in turn,
    with a state (samples the job consumed) that loads into a job of any size, mid-epoch.

    ``block_size`` (records) and ``window`` (blocks) choose the block-window shuffle, for storage where
    every read is a round trip: a batch's records then come from about ``window`` runs of
    ``block_size`` neighbours (with ``block_size * window`` at least batch size x world size).
    """

    def __init__(
        self,
        dataset: Sized,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
        *,
        block_size: int | None = None,
        window: int = 1,
    ) -> None:
        if num_replicas is None or rank is None:
            if not dist.is_available() or not dist.is_initialized():
                raise RuntimeError("no process group: call dist.init_process_group(), or pass num_replicas and rank")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if not 0 <= rank < num_replicas:
            raise ValueError(f"invalid rank {rank}: rank should be in the interval [0, {num_replicas - 1}]")
        if block_size is not None and (not shuffle or block_size < 1 or window < 1):
            raise ValueError(f"block_size={block_size}, window={window}: both at least 1, and only with shuffle=True")
        self.dataset = dataset
        self.num_replicas, self.rank = num_replicas, rank
        self.shuffle, self.seed, self.drop_last = shuffle, seed, drop_last
        self.block_size, self.window = block_size, (window if block_size is not None else 1)
        self.epoch = 0
        self._start = 0  # the epoch's position the current (or next) iteration starts from
        self._yielded = 0  # indices the current iteration has yielded on this rank
        self._resume: int | None = None  # a loaded position, taken by the next iteration
        self._cached: tuple[tuple[Any, ...], np.ndarray] | None = None

    def set_epoch(self, epoch: int) -> None:
        """Choose the epoch, as DistributedSampler's; a loaded position belongs to its own epoch only."""
        if epoch != self.epoch:
            self._start, self._yielded, self._resume = 0, 0, None
        self.epoch = epoch

    def _size(self) -> int:
        return len(self.dataset)

    def _count(self, start: int) -> int:
        """Indices each rank draws in an iteration that starts at ``start`` (DistributedSampler's rule)."""
        left = max(self._size() - start, 0)
        return left // self.num_replicas if self.drop_last else math.ceil(left / self.num_replicas)

    @property
    def num_samples(self) -> int:
        """Indices this rank draws in the next (or current) iteration: fewer after a resume."""
        return self._count(self._resume if self._resume is not None else self._start)

    @property
    def total_size(self) -> int:
        return self.num_samples * self.num_replicas

    def __len__(self) -> int:
        return self.num_samples

    def permutation(self) -> np.ndarray:
        """The whole epoch's order, the same for every rank and world size."""
        # keyed by everything the order depends on: seed, shuffle, ... may be set between epochs, as
        # DistributedSampler users do, and the state must describe the order actually given
        key = (self.epoch, *self._order_fields())
        if self._cached is None or self._cached[0] != key:
            if self.shuffle:
                order = epoch_permutation(self._size(), self.seed, self.epoch, self.block_size, self.window)
            else:
                order = np.arange(self._size(), dtype=np.int64)
            self._cached = (key, order)
        return self._cached[1]

    def __iter__(self) -> Iterator[int]:
        # A generator: nothing happens until the first index is asked for, so an iterator made and
        # dropped (StatefulDataLoader makes one before it loads a state) leaves a loaded position alone.
        start = self._resume if self._resume is not None else 0
        self._start, self._yielded, self._resume = start, 0, None
        order, size, step = self.permutation(), self._size(), self.num_replicas
        for position in range(start + self.rank, start + self._count(start) * step, step):
            self._yielded += 1  # counted before it is handed out: a state taken now includes it
            yield int(order[position % size])  # past the end: padding from the epoch's beginning

    def state_dict(self, consumed: int | None = None) -> dict[str, Any]:
        """Where the epoch stands: ``consumed`` samples of its permutation, by the whole job.

        Without ``consumed``: after the indices this rank's iterator has yielded (what
        StatefulDataLoader records). A plain DataLoader's sampler runs ahead of the loop, so pass the
        number of samples this rank's loop received in this iteration (``steps * batch_size``)."""
        start, yielded = self._start, self._yielded
        if consumed is not None:
            if consumed < 0 or min(consumed, self._count(start)) > yielded:
                raise ValueError(
                    f"consumed={consumed}: the loop cannot have received more than the {yielded} indices drawn"
                )
            yielded = min(consumed, self._count(start))
        elif self._resume is not None:  # loaded, not yet iterated: the loaded position
            start, yielded = self._resume, 0
        return {
            "epoch": self.epoch,
            "consumed": self._position(start, yielded),
            "num_replicas": self.num_replicas,  # what saved it; a state loads at any world size
            **{name: value for name, value in zip(_ORDER_FIELDS, self._order_fields(), strict=True)},
            **_revision_entry(getattr(self.dataset, "revision", None)),
        }

    def _position(self, start: int, yielded: int) -> int:
        """The epoch's samples the job consumed once every rank drew ``yielded`` indices from ``start``;
        all of them once the iteration drew its last: what drop_last left out is not for a later job."""
        if yielded >= self._count(start):
            return self._size()
        return start + yielded * self.num_replicas

    def _order_fields(self) -> tuple[Any, ...]:
        return (self._size(), self.seed, self.shuffle, self.block_size, self.window)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue the saved epoch from the samples the saving job consumed, at this world size.

        A state with nothing left for this job (its epoch ended, or drop_last leaves out what is left)
        resumes to an empty rest of its epoch: the next iteration yields nothing, and set_epoch of
        another epoch starts that one whole. Loaded after set_epoch chose a later epoch (torchdata's
        StatefulDataLoader loads its state when iterated, after the loop's set_epoch), that finished
        epoch is behind the job: the later epoch starts whole."""
        _check_state(state, dict(zip(_ORDER_FIELDS, self._order_fields(), strict=True)))
        _check_revision(state, getattr(self.dataset, "revision", None))
        epoch, consumed = state["epoch"], state["consumed"]
        if self._count(consumed) == 0:
            if self.epoch > epoch:
                self._start, self._yielded, self._resume = 0, 0, None
                return
            consumed = self._size()  # the epoch is done: its empty rest, whatever the world size later
        self.epoch = epoch
        self._start, self._yielded, self._resume = consumed, 0, consumed


def sampler_state_from_loader(loader_state: dict[str, Any], batch_size: int | None = None) -> dict[str, Any]:
    """The sampler's state inside a saved ``StatefulDataLoader.state_dict()``, to load with
    ``sampler.load_state_dict`` into a fresh loader with any ``num_workers`` (torchdata refuses the
    loader's state itself when ``num_workers`` changed). ``batch_size`` is needed only for a state
    saved with ``snapshot_every_n_steps`` above 1, whose sampler state lags the loop by some batches."""
    main, steps = loader_state, 0
    if "_snapshot" in loader_state:  # num_workers > 0: the main process's state at the last snapshot
        main, steps = loader_state["_snapshot"]["_main_snapshot"], loader_state["_steps_since_snapshot"]
    batches = main.get("_sampler_iter_state") or {}
    if "sampler_state" not in batches:
        raise ValueError(
            "no sampler state in this StatefulDataLoader state: build the loader with "
            "sampler=ElasticDistributedSampler(...) and batch_size, and save loader.state_dict()"
        )
    state = dict(batches["sampler_state"])
    if steps:
        if batch_size is None:
            raise ValueError(f"the state is {steps} batches past its snapshot: pass batch_size= of the loader")
        left = state["dataset_size"] - state["consumed"]
        state["consumed"] += min(steps * batch_size * state["num_replicas"], left)
    return state
