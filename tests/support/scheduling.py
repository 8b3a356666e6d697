"""How ``make test`` spreads the tests over its worker processes (pytest-xdist, ``--dist loadgroup``).

Each test is a unit of its own, except those marked ``pytest.mark.xdist_group(NAME)``: a group runs
whole, in file order, on one worker. Groups are for tests that share one thing that must not be
doubled or used twice at once (the SLURM test cluster: one per machine) or that is costly to build
per worker (a module fixture). The largest groups are handed out first, and ``FIRST`` before any
other: the SLURM tests are the run's long pole (minutes of waiting on the scheduler), so they start
on one worker at once while the other workers run everything else.

A module whose tests share a module-scoped fixture (a conversion, an archive, a venv) is a group of
its own without being marked (``group_modules``): a module fixture is built once per worker that
runs one of its tests, so spread over two workers it would be built twice.
"""

from __future__ import annotations

import pytest
from xdist.scheduler import LoadGroupScheduling
from xdist.workermanage import WorkerController

#: Handed out before all others, in this order: groups by name, other tests by the start of their node
#: id. The SLURM tests first, then the tests of a minute or more (``slow``), so none of them starts
#: near the end of a run and leaves the other workers idle while it finishes.
FIRST = (
    "slurm",
    "tests/workflow/test_restructure.py::test_every_kind",
    "tests/workflow/test_fuzz.py",
    "tests/workflow/test_sampler_distributed.py",
    "tests/workflow/test_source_change.py",
    "tests/workflow/test_floors.py",
    "tests/workflow/test_readme.py::test_runnable",
    "tests/workflow/test_fuzz_archives.py",
    "tests/workflow/test_restructure.py",
)


class LongPoleFirst(LoadGroupScheduling):
    """``--dist loadgroup`` with the work of ``FIRST`` handed out first."""

    def _assign_work_unit(self, node: WorkerController) -> None:
        for prefix in reversed(FIRST):
            for scope in [scope for scope in self.workqueue if scope.startswith(prefix)][::-1]:
                self.workqueue.move_to_end(scope, last=False)
        super()._assign_work_unit(node)


def group_modules(items: list[pytest.Item]) -> None:
    """Mark each test that uses a module-scoped fixture with its module's xdist group (one worker
    builds the fixture once and runs the module); tests already in a group keep theirs."""
    for item in items:
        fixtures = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
        if item.get_closest_marker("xdist_group") is None and any(
            definitions and definitions[-1].scope == "module" for definitions in fixtures.values()
        ):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


#: A module whose tests are always grouped (FIRST's): its node ids show whether grouping works.
ALWAYS_GROUPED = "tests/cluster/test_slurm.py::"


def check_grouped(ids: list[str]) -> None:
    """Raise where xdist did not add the group to the grouped tests' node ids (its ``@NAME`` suffix,
    by which its scheduler sees a group): pytest 9.2 keeps node ids where pytest-xdist 3.8 cannot
    add it, and the SLURM tests then ran on both workers, each installing and starting a cluster."""
    lost = [nodeid for nodeid in ids if nodeid.startswith(ALWAYS_GROUPED) and "@" not in nodeid]
    if lost:
        raise pytest.UsageError(
            f"pytest-xdist did not group {lost[0]}: this pytest and pytest-xdist do not work together "
            "(requirements-dev.txt pins a pair that does)"
        )
