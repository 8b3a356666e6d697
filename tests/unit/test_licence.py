"""The licence goes wherever the code goes: LICENSE, the package metadata, and the notice at the top
of scripts/dataset.py, the reader's entry module in a checkout."""

from __future__ import annotations

import tomllib

from support import REPO

LICENSE = (REPO / "LICENSE").read_text()


def leading_comment(path: str) -> list[str]:
    """The comment block a file opens with, without the ``#`` marks."""
    lines = []
    for line in (REPO / path).read_text().splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.removeprefix("#").removeprefix(" "))
    return lines


def test_licence_is_mit() -> None:
    assert LICENSE.startswith("MIT License\n\nCopyright (c) 2026 the imagefolder-lmdb authors\n")
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]


def test_dataset_py_carries_the_whole_notice() -> None:
    header = leading_comment("scripts/dataset.py")
    assert header[0] == "SPDX-License-Identifier: MIT"
    notice = LICENSE.split("\n", 2)[2].strip().splitlines()  # from the copyright line on
    assert header[1:] == notice, "the copied file must carry LICENSE's notice word for word"
