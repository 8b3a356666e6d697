"""How ``make test`` spreads the tests over its worker processes (pytest-xdist, ``--dist loadgroup``).

Each test is a unit of its own, except those marked ``pytest.mark.xdist_group(NAME)``: a group runs
whole, in file order, on one worker. Groups are for tests that share one thing that must not be
doubled or used twice at once (the SLURM test cluster: one per machine) or that is costly to build
per worker (a module fixture).

A module whose tests share a module-scoped fixture (a conversion, an archive, a venv) is a group of
its own without being marked (``assign_groups``): a module fixture is built once per worker that
runs one of its tests, so spread over two workers it would be built twice.

The long poles are handed out first (``LongPoleFirst``): the SLURM group (minutes of waiting on the
scheduler) at once on one worker, then every test marked ``slow`` (a minute or more), so none of
them starts near the end of a run and leaves the other workers idle while it finishes. The
controller that hands out work sees only node ids, so a slow test's group name says it
(``slow:<module or test>``): the ``slow`` marks are the one list of long tests.
"""

from __future__ import annotations

import pytest
from xdist.scheduler import LoadGroupScheduling
from xdist.workermanage import WorkerController

#: The SLURM tests' group: handed out before all others.
SLURM_GROUP = "slurm"
#: The start of a group name holding tests marked ``slow``: handed out next.
SLOW_GROUP = "slow:"
NO_BRACKETS = str.maketrans("[]", "()")


class LongPoleFirst(LoadGroupScheduling):
    """``--dist loadgroup`` with the SLURM group, then the slow tests' groups, handed out first."""

    def _assign_work_unit(self, node: WorkerController) -> None:
        # scopes are group names here (the part of a node id after "@"), or node ids of ungrouped tests
        first = [scope for scope in self.workqueue if scope.startswith(SLOW_GROUP)]
        first = [scope for scope in self.workqueue if scope == SLURM_GROUP] + first
        for scope in reversed(first):
            self.workqueue.move_to_end(scope, last=False)
        super()._assign_work_unit(node)


def assign_groups(items: list[pytest.Item]) -> None:
    """Mark each test that uses a module-scoped fixture with its module's xdist group (one worker
    builds the fixture once and runs the module), and each other slow test with a group of its own;
    a group holding a slow test is named ``slow:...``. Tests already in a group keep theirs."""
    modules_with_slow = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow")}
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        module = item.nodeid.split("::")[0]
        if uses_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(f"{SLOW_GROUP}{module}" if module in modules_with_slow else module))
        elif item.get_closest_marker("slow") is not None:
            # xdist reads a node id's group after its last "@" only past its last "]": none in the name
            item.add_marker(pytest.mark.xdist_group(f"{SLOW_GROUP}{item.nodeid}".translate(NO_BRACKETS)))


def uses_module_fixture(item: pytest.Item) -> bool:
    fixtures = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    return any(definitions and definitions[-1].scope == "module" for definitions in fixtures.values())


#: A module whose tests are always grouped (the SLURM group): its node ids show whether grouping works.
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
