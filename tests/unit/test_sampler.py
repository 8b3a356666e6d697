"""ElasticDistributedSampler (issue 32), in one process with explicit ranks: one permutation per
epoch whatever the world size, and a mid-epoch state that resumes at another world size, through a
plain DataLoader (``state_dict(consumed=...)``) and through torchdata's StatefulDataLoader."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from torch.utils.data import DataLoader, Dataset, DistributedSampler

from imagefolder_lmdb import ElasticDistributedSampler, sampler_state_from_loader

#: Not a multiple of any world size tested, so every epoch ends in a partial step.
SIZE = 103
WORLDS = (1, 2, 3, 4, 8)
#: Full shuffle, block-window shuffle, no shuffle.
ORDERS = {"full": {}, "blocks": {"block_size": 4, "window": 3}, "none": {"shuffle": False}}


class Indices(Dataset[int]):
    """A map-style dataset whose sample is its index, so a loader's output names what it read."""

    def __len__(self) -> int:
        return SIZE

    def __getitem__(self, index: int) -> int:
        return index


def samplers(world: int, **options: object) -> list[ElasticDistributedSampler]:
    return [ElasticDistributedSampler(Indices(), num_replicas=world, rank=r, seed=5, **options) for r in range(world)]


def interleave(draws: list[list[int]]) -> list[int]:
    """The ranks' draws in the order they are dealt: rank 0's first, rank 1's first, ..."""
    return [index for step in itertools.zip_longest(*draws) for index in step if index is not None]


def drawn(ranks: list[ElasticDistributedSampler], steps: int | None = None) -> list[list[int]]:
    """What each rank draws: all of the iteration, or its first ``steps`` indices."""
    return [list(itertools.islice(iter(sampler), steps)) for sampler in ranks]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("drop_last", [False, True])
def test_every_world_size_deals_one_permutation(order: str, drop_last: bool) -> None:
    epoch = interleave(drawn(samplers(1, **ORDERS[order])))
    assert sorted(epoch) == list(range(SIZE)), "an epoch covers every index once"
    assert (epoch == list(range(SIZE))) == (order == "none")
    for world in WORLDS:
        ranks = samplers(world, drop_last=drop_last, **ORDERS[order])
        draws = drawn(ranks)
        assert {len(draw) for draw in draws} == {len(ranks[0])}, "every rank draws as many"
        dealt = interleave(draws)
        whole = SIZE // world * world if drop_last else SIZE
        assert dealt[:whole] == epoch[:whole], f"world {world}: the same permutation"
        assert dealt[whole:] == ([] if drop_last else epoch[: len(dealt) - SIZE]), "padding from the epoch's start"


@pytest.mark.parametrize("drop_last", [False, True])
def test_unshuffled_draws_are_distributed_samplers(drop_last: bool) -> None:
    """A drop-in: in the dataset's order, every rank draws what DistributedSampler gives it, padding
    and drop_last included."""
    for world in WORLDS:
        for rank, sampler in enumerate(samplers(world, shuffle=False, drop_last=drop_last)):
            theirs = DistributedSampler(Indices(), num_replicas=world, rank=rank, shuffle=False, drop_last=drop_last)
            assert list(sampler) == list(theirs) and len(sampler) == len(theirs), f"rank {rank} of {world}"


@pytest.mark.parametrize("order", ["full", "blocks"])
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("new_world", [2, 3, 8])
def test_resume_at_another_world_size_covers_the_unseen(order: str, drop_last: bool, new_world: int) -> None:
    first = samplers(4, drop_last=drop_last, **ORDERS[order])
    seen = interleave(drawn(first, steps=7))  # 7 steps of batch 1, or 1 of 7, at world size 4
    states = [sampler.state_dict() for sampler in first]
    assert all(state == states[0] for state in states), "every rank's state says the same"
    assert states[0]["consumed"] == 28
    epoch = interleave(drawn(samplers(1, **ORDERS[order])))
    resumed = samplers(new_world, drop_last=drop_last, **ORDERS[order])
    for rank, sampler in enumerate(resumed):
        sampler.load_state_dict(states[rank % 4])  # any rank's state loads on any rank
    rest = interleave(drawn(resumed))
    left = SIZE - 28
    if drop_last:
        assert rest == epoch[28 : 28 + left // new_world * new_world], "the rest, the last partial step left out"
    else:
        assert rest[:left] == epoch[28:], "the rest of the same permutation, each index once"
        assert rest[left:] == epoch[: len(rest) - left] and len(rest) - left < new_world, "padding only"
    assert not set(seen) & set(rest[:left])


def test_same_seed_and_epoch_same_order_everywhere() -> None:
    def order(seed: int, epoch: int, **options: object) -> list[int]:
        sampler = ElasticDistributedSampler(range(1000), num_replicas=1, rank=0, seed=seed, **options)
        sampler.set_epoch(epoch)
        return list(sampler)

    assert order(0, 0) == order(0, 0) and order(3, 2, block_size=8, window=4) == order(3, 2, block_size=8, window=4)
    # A fixed hash, not torch's or numpy's generators: these values hold on every machine and version.
    assert order(0, 0)[:8] == [942, 235, 682, 385, 787, 609, 641, 863]
    assert order(0, 1) != order(0, 0) and order(1, 0) != order(0, 0), "a new epoch or seed, a new order"
    assert sorted(order(0, 1)) == list(range(1000))


@pytest.mark.parametrize(("size", "most"), [(1024, 4), (1000, 5)])
def test_block_window_shuffle_keeps_each_window_to_its_blocks(size: int, most: int) -> None:
    """A window is 64 records: 4 blocks' (5 when the shorter last block came before it)."""
    sampler = ElasticDistributedSampler(range(size), num_replicas=1, rank=0, block_size=16, window=4)
    order = list(sampler)
    assert sorted(order) == list(range(size))
    windows = [order[start : start + 64] for start in range(0, size, 64)]
    assert max(len({index // 16 for index in window}) for window in windows) == most
    assert windows[0] != sorted(windows[0]), "records shuffled within their window"


def test_plain_dataloader_with_workers_resumes_from_consumed() -> None:
    """A plain DataLoader's sampler runs ahead of the loop (2 workers prefetch); the state made from
    what the loop received resumes with no index lost or repeated, at another world size."""

    def loaders(world: int, state: dict | None = None) -> tuple[list[ElasticDistributedSampler], list[Iterator]]:
        ranks = samplers(world)
        for sampler in ranks if state else []:
            sampler.load_state_dict(state)  # before the loader starts: its workers prefetch at once
        return ranks, [iter(DataLoader(Indices(), batch_size=5, sampler=s, num_workers=2)) for s in ranks]

    ranks, loops = loaders(2)
    seen = [[int(i) for step in range(3) for i in next(loop)] for loop in loops]  # 3 steps of 5
    assert all(sampler.state_dict()["consumed"] > 30 for sampler in ranks), "the samplers ran ahead"
    state = ranks[1].state_dict(consumed=3 * 5)
    assert state["consumed"] == 30
    del loops
    _, loops = loaders(3, state)
    rest = [[int(i) for batch in loop for i in batch] for loop in loops]
    everything = interleave(seen) + interleave(rest)
    assert sorted(everything[:SIZE]) == list(range(SIZE)) and len(everything) - SIZE < 3, "padding only"


@pytest.mark.filterwarnings("ignore:'set_vital' is deprecated:UserWarning")
@pytest.mark.parametrize(("workers", "new_workers"), [(2, 0), (0, 2)])
def test_stateful_dataloader_state_is_what_the_loop_received(workers: int, new_workers: int) -> None:
    """StatefulDataLoader keeps the sampler's state as each batch was drawn; the helper takes it out
    of the loader's state, for a fresh loader with another num_workers."""
    from torchdata.stateful_dataloader import StatefulDataLoader

    sampler = ElasticDistributedSampler(Indices(), num_replicas=1, rank=0)
    loader = StatefulDataLoader(Indices(), batch_size=4, sampler=sampler, num_workers=workers)
    batches = iter(loader)
    seen = [int(i) for _ in range(5) for i in next(batches)]
    state = sampler_state_from_loader(loader.state_dict())
    assert state["consumed"] == 20, "the state counts what the loop received, not what was prefetched"
    del batches, loader
    fresh = ElasticDistributedSampler(Indices(), num_replicas=1, rank=0)
    fresh.load_state_dict(state)
    again = StatefulDataLoader(Indices(), batch_size=4, sampler=fresh, num_workers=new_workers)
    rest = [int(i) for batch in again for i in batch]
    assert seen + rest == list(ElasticDistributedSampler(Indices(), num_replicas=1, rank=0)), "the epoch, once"


def test_states_of_another_order_or_epoch() -> None:
    state = samplers(2)[0].state_dict(consumed=0)
    with pytest.raises(ValueError, match=r"seed=5 \(this sampler: 6\)"):
        ElasticDistributedSampler(Indices(), num_replicas=2, rank=0, seed=6).load_state_dict(state)
    with pytest.raises(ValueError, match="not an ElasticDistributedSampler state"):
        samplers(2)[0].load_state_dict({"yielded": 3})
    with pytest.raises(ValueError, match="cannot have received more"):
        samplers(2)[0].state_dict(consumed=1)
    sampler = samplers(3)[0]
    sampler.load_state_dict({**state, "consumed": 30})
    assert len(sampler) == 25
    sampler.set_epoch(1)  # another epoch than the state's: it starts at its beginning
    assert len(list(sampler)) == 35
    sampler.load_state_dict({**state, "consumed": SIZE})  # a finished epoch: the next starts afresh
    assert sampler.epoch == 1 and len(list(sampler)) == 35


@pytest.mark.filterwarnings("ignore:'set_vital' is deprecated:UserWarning")
def test_loader_state_between_snapshots_needs_the_batch_size() -> None:
    """With snapshot_every_n_steps above 1 the loader keeps the sampler's state of its last snapshot
    and the batches since: the helper adds those, given the batch size."""
    from torchdata.stateful_dataloader import StatefulDataLoader

    sampler = ElasticDistributedSampler(Indices(), num_replicas=1, rank=0)
    loader = StatefulDataLoader(Indices(), batch_size=4, sampler=sampler, num_workers=2, snapshot_every_n_steps=3)
    batches = iter(loader)
    for _ in range(4):
        next(batches)
    state = loader.state_dict()
    with pytest.raises(ValueError, match="1 batches past its snapshot: pass batch_size="):
        sampler_state_from_loader(state)
    assert sampler_state_from_loader(state, batch_size=4)["consumed"] == 16


@pytest.mark.filterwarnings("ignore:'set_vital' is deprecated:UserWarning")
def test_stateful_dataloader_state_after_a_whole_epoch_starts_the_next() -> None:
    """A loader state saved once the epoch ended loads as nothing left: the next epoch is whole."""
    from torchdata.stateful_dataloader import StatefulDataLoader

    first = StatefulDataLoader(Indices(), batch_size=4, sampler=samplers(1)[0])
    assert sum(len(batch) for batch in first) == SIZE
    sampler = samplers(1)[0]
    loader = StatefulDataLoader(Indices(), batch_size=4, sampler=sampler)
    loader.load_state_dict(first.state_dict())
    sampler.set_epoch(1)
    reference = samplers(1)[0]
    reference.set_epoch(1)
    assert [int(i) for batch in loader for i in batch] == list(reference)


def test_an_order_setting_changed_between_epochs_is_the_order_given_and_the_state_kept() -> None:
    # seed and shuffle may be set on the sampler between epochs, as DistributedSampler users do; the
    # order once stayed the first seed's while the state recorded the new one, so a resume repeated
    # some indices and never gave others.
    sampler = ElasticDistributedSampler(Indices(), num_replicas=1, rank=0, seed=1)
    first = list(sampler)
    sampler.seed = 2
    second = list(sampler)
    assert second != first and second == list(ElasticDistributedSampler(Indices(), num_replicas=1, rank=0, seed=2))
    resumed = ElasticDistributedSampler(Indices(), num_replicas=1, rank=0, seed=2)
    resumed.load_state_dict(sampler.state_dict(consumed=40))
    assert second[:40] + list(resumed) == second
    sampler.shuffle = False
    assert list(sampler) == list(range(SIZE))


# -- Resume at every boundary, against DistributedSampler (issue 41): a state saved at any point of
# an epoch, its very end included, resumes to the rest of that epoch as DistributedSampler deals it
# at the new world size, and to nothing once the epoch is done; never to the epoch again.

#: World sizes a job resumes on: fewer and more ranks than any that saved, and 1.
NEW_WORLDS = (1, 2, 3, 5, 8)
#: One shuffle of each kind, as (shuffle, block_size, window).
SHUFFLES: dict[str, dict[str, Any]] = {"full": {}, "blocks": {"block_size": 4, "window": 3}, "none": {"shuffle": False}}


class IndicesOf(Dataset[int]):
    """Indices of a dataset of any size: the sample is its index."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> int:
        return index


def job(size: int, world: int, drop_last: bool, shuffle: str, epoch: int = 2) -> list[ElasticDistributedSampler]:
    ranks = [
        ElasticDistributedSampler(IndicesOf(size), world, rank, seed=5, drop_last=drop_last, **SHUFFLES[shuffle])
        for rank in range(world)
    ]
    for sampler in ranks:
        sampler.set_epoch(epoch)
    return ranks


def whole_epoch(size: int, shuffle: str, epoch: int = 2) -> list[int]:
    return list(job(size, 1, False, shuffle, epoch)[0])


def owed(epoch: list[int], consumed: int, world: int, rank: int, drop_last: bool) -> list[int]:
    """The reference: what rank ``rank`` of ``world`` draws of the rest of ``epoch`` once the job
    consumed its first ``consumed`` samples. DistributedSampler, unshuffled, over the rest; a slot it
    pads (one past the rest) holds the epoch's first samples, as a whole epoch pads."""
    left = len(epoch) - consumed
    theirs: list[int] = list(
        DistributedSampler(IndicesOf(left), num_replicas=world, rank=rank, shuffle=False, drop_last=drop_last)
    )
    slots = range(rank, len(theirs) * world, world)  # where DistributedSampler dealt this rank's indices
    assert all(index == slot for slot, index in zip(slots, theirs, strict=True) if slot < left)
    return [epoch[consumed + slot] if slot < left else epoch[(slot - left) % len(epoch)] for slot in slots]


def resume(state: dict, size: int, world: int, drop_last: bool, shuffle: str) -> list[ElasticDistributedSampler]:
    """A new job of ``world`` ranks, built afresh (epoch 0) as a restarted job is, with ``state`` loaded."""
    ranks = job(size, world, drop_last, shuffle, epoch=0)
    for sampler in ranks:
        sampler.load_state_dict(state)
    return ranks


@pytest.mark.parametrize("shuffle", SHUFFLES)
@pytest.mark.parametrize("drop_last", [False, True], ids=["pad", "drop_last"])
def test_every_consumed_count_resumes_to_distributed_samplers_rest(shuffle: str, drop_last: bool) -> None:
    """Every possible state (0 to len, any remainder) at every new world size: the rest as
    DistributedSampler deals it, drop_last leaving out fewer than world-size samples, padding
    repeating fewer; once the rest is drawn the epoch is done, and the next epoch is whole."""
    for size in (50, 103):
        epoch = whole_epoch(size, shuffle)
        following = whole_epoch(size, shuffle, epoch=3)
        saved = job(size, 1, drop_last, shuffle)[0].state_dict()
        for consumed in range(size + 1):
            for world in NEW_WORLDS:
                case = f"size {size}, consumed {consumed}, world {world}"
                ranks = resume({**saved, "consumed": consumed}, size, world, drop_last, shuffle)
                draws = [list(sampler) for sampler in ranks]
                assert draws == [owed(epoch, consumed, world, r, drop_last) for r in range(world)], case
                assert [len(sampler) for sampler in ranks] == [len(draw) for draw in draws], case
                dealt = sum(map(len, draws))
                left = size - consumed
                assert (left - dealt if drop_last else dealt - left) in range(world), case
                for sampler in ranks:  # drawn to its end: the epoch is done, for any later job
                    assert sampler.state_dict() == {**saved, "consumed": size, "num_replicas": world}, case
                again = resume(ranks[0].state_dict(), size, world, drop_last, shuffle)
                assert [list(sampler) for sampler in again] == [[]] * world, f"{case}: a done epoch, again"
                again[0].set_epoch(3)
                assert len(list(again[0])) == len(owed(following, 0, world, 0, drop_last)), f"{case}: next epoch"


@pytest.mark.parametrize("shuffle", ["full", "none"])
@pytest.mark.parametrize("drop_last", [False, True], ids=["pad", "drop_last"])
@pytest.mark.parametrize("world", [1, 3, 4])
def test_a_state_taken_at_every_step_resumes_on_every_world_size(shuffle: str, drop_last: bool, world: int) -> None:
    """States a job takes itself, at each of its ranks' steps from the first to past the last: from
    the running iterator (StatefulDataLoader's way) and with consumed=N after the sampler ran ahead
    (a plain DataLoader's way, N any count of samples, not only whole batches)."""
    size = 50
    epoch = whole_epoch(size, shuffle)
    per_rank = len(job(size, world, drop_last, shuffle)[0])
    for drawn in range(per_rank + 1):
        running = job(size, world, drop_last, shuffle)
        iterators = [iter(sampler) for sampler in running]
        for iterator in iterators:
            list(itertools.islice(iterator, drawn))
        ahead = job(size, world, drop_last, shuffle)
        for sampler in ahead:
            list(sampler)  # a plain DataLoader's sampler: drawn to its end while the loop is behind
        consumed = size if drawn == per_rank else drawn * world
        for state in [sampler.state_dict() for sampler in running] + [s.state_dict(consumed=drawn) for s in ahead]:
            assert (state["epoch"], state["consumed"]) == (2, consumed), f"world {world}, {drawn} drawn"
            for new_world in NEW_WORLDS:
                ranks = resume(state, size, new_world, drop_last, shuffle)
                expected = [owed(epoch, consumed, new_world, r, drop_last) for r in range(new_world)]
                assert [list(sampler) for sampler in ranks] == expected, f"{world} -> {new_world}, {drawn} drawn"


def test_a_state_after_set_epoch_of_the_next_epoch_resumes_it_whole() -> None:
    ranks = job(50, 3, True, "full")
    for sampler in ranks:
        list(sampler)
        sampler.set_epoch(3)
    state = ranks[0].state_dict()
    assert (state["epoch"], state["consumed"]) == (3, 0)
    resumed = resume(state, 50, 5, True, "full")
    assert [list(sampler) for sampler in resumed] == [owed(whole_epoch(50, "full", 3), 0, 5, r, True) for r in range(5)]


def test_a_finished_epoch_loaded_after_set_epoch_of_a_later_one_starts_that_one() -> None:
    """StatefulDataLoader loads its state when it is iterated, after the loop's set_epoch: a state of
    an epoch that ended, saved as the next epoch's checkpoint, starts the next epoch whole; the same
    epoch named stays done."""
    done = {**job(50, 3, False, "full")[0].state_dict(), "consumed": 50}
    later = job(50, 2, False, "full", epoch=3)
    later[0].load_state_dict(done)
    assert later[0].epoch == 3 and list(later[0]) == owed(whole_epoch(50, "full", 3), 0, 2, 0, False)
    same = job(50, 2, False, "full", epoch=2)
    same[0].load_state_dict(done)
    same[0].set_epoch(2)  # the loop naming the loaded epoch again: it stays done
    assert list(same[0]) == [] and same[0].state_dict() == {**done, "num_replicas": 2}


def test_states_written_by_earlier_versions_load() -> None:
    """The state's keys are those earlier versions wrote; a drop_last job of theirs recorded its
    finished epoch without the samples drop_last left out (48 of 50 at 3 ranks)."""
    earlier = {
        "epoch": 2, "consumed": 48, "num_replicas": 3, "dataset_size": 50,
        "seed": 5, "shuffle": True, "block_size": None, "window": 1,
    }  # fmt: skip
    assert set(job(50, 3, True, "full")[0].state_dict()) == set(earlier)
    epoch = whole_epoch(50, "full")
    for world in (3, 5):  # nothing left for these: the epoch is done
        assert [list(sampler) for sampler in resume(earlier, 50, world, True, "full")] == [[]] * world
    # fewer ranks than left over: the two samples that epoch never gave, as DistributedSampler deals them
    assert [list(sampler) for sampler in resume(earlier, 50, 2, True, "full")] == [[epoch[48]], [epoch[49]]]
    assert resume({**earlier, "consumed": 50}, 50, 1, False, "full")[0].state_dict()["consumed"] == 50


def read(loader: object) -> list[int]:
    return [int(index) for batch in loader for index in batch]  # type: ignore[attr-defined]


def stopped_loader_state(sampler: ElasticDistributedSampler, workers: int, stop: str) -> dict:
    """A StatefulDataLoader's state, saved halfway through the epoch, after its last batch (a
    checkpoint every N steps that lands there), or once its loop ended."""
    from torchdata.stateful_dataloader import StatefulDataLoader

    loader = StatefulDataLoader(sampler.dataset, batch_size=4, sampler=sampler, num_workers=workers)
    steps = {"half": len(loader) // 2, "last batch": len(loader), "loop ended": len(loader) + 1}[stop]
    for _ in zip(range(steps), loader, strict=False):
        pass
    return loader.state_dict()


@pytest.mark.filterwarnings("ignore:'set_vital' is deprecated:UserWarning")
@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("stop", ["half", "last batch", "loop ended"])
def test_stateful_dataloader_resumes_the_rest_and_never_the_epoch_again(workers: int, stop: str) -> None:
    """The loader's own state (same num_workers, one rank) and the sampler's state out of it (3 ranks
    -> 5, drop_last, 50 samples: two left over at the end): the rest of the epoch, nothing once it is
    done, and then the next epoch whole."""
    from torchdata.stateful_dataloader import StatefulDataLoader

    first = job(23, 1, False, "full")[0]
    state = stopped_loader_state(first, workers, stop)
    sampler = job(23, 1, False, "full", epoch=0)[0]
    loader = StatefulDataLoader(sampler.dataset, batch_size=4, sampler=sampler, num_workers=workers)
    loader.load_state_dict(state)
    done = {"half": 12, "last batch": 23, "loop ended": 23}[stop]
    if stop != "loop ended":  # a loop-ended state is torchdata's finished one: its next iteration is a new pass
        sampler.set_epoch(2)
        assert read(loader) == owed(whole_epoch(23, "full"), done, 1, 0, False)
    sampler.set_epoch(3)
    assert read(loader) == whole_epoch(23, "full", epoch=3)

    states = [stopped_loader_state(sampler, workers, stop) for sampler in job(50, 3, True, "full")]
    consumed = {"half": 24, "last batch": 50, "loop ended": 50}[stop]
    assert {sampler_state_from_loader(state)["consumed"] for state in states} == {consumed}
    epoch = whole_epoch(50, "full")
    for rank, sampler in enumerate(job(50, 5, True, "full", epoch=0)):
        sampler.load_state_dict(sampler_state_from_loader(states[rank % 3]))
        loader = StatefulDataLoader(sampler.dataset, batch_size=4, sampler=sampler, num_workers=workers)
        sampler.set_epoch(2)
        assert read(loader) == owed(epoch, consumed, 5, rank, True), f"rank {rank} of 5"
    sampler.set_epoch(3)
    assert read(loader) == owed(whole_epoch(50, "full", 3), 0, 5, 4, True)


@pytest.mark.filterwarnings("ignore:'set_vital' is deprecated:UserWarning")
@pytest.mark.parametrize("workers", [0, 2])
def test_a_loader_state_saved_after_its_loop_ended_into_a_loop_naming_the_same_epoch(workers: int) -> None:
    """What docs/training.md says of torchdata's finished state, loaded into the loader itself: with
    workers torchdata drops the resumed iterator and starts a new pass, so the epoch set_epoch names
    is read from its start; with none, nothing. sampler_state_from_loader resumes it to nothing."""
    from torchdata.stateful_dataloader import StatefulDataLoader

    state = stopped_loader_state(job(23, 1, False, "full")[0], workers, "loop ended")
    assert state["_iterator_finished"]
    sampler = job(23, 1, False, "full", epoch=0)[0]
    loader = StatefulDataLoader(sampler.dataset, batch_size=4, sampler=sampler, num_workers=workers)
    loader.load_state_dict(state)
    sampler.set_epoch(2)
    assert read(loader) == (whole_epoch(23, "full") if workers else [])
    sampler.load_state_dict(sampler_state_from_loader(state))
    sampler.set_epoch(2)
    assert read(loader) == []
