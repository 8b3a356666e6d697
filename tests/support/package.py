"""The repository as a user gets it: its files as a commit would hold them, a wheel pip builds from
a clone of them, and a fresh venv that the wheel is installed into: one that sees the project's
venv (fresh_venv: torch is not installed twice), or one per documented install that sees nothing
else (installed_venv, from a wheelhouse made once: dependency_wheelhouse)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from . import REPO
from .sharing import built_once


def copy_working_tree(into: Path) -> Path:
    """The repository's files as a commit of the working tree would hold them: tracked files that
    still exist and files git does not ignore, so that an uncommitted change is what is tested
    (mtimes kept, so make sees .venv as up to date). Returns ``into``."""
    listing = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    files = subprocess.run(listing, cwd=REPO, capture_output=True, check=True).stdout
    for name in sorted(set(filter(None, files.decode().split("\0")))):
        if not (REPO / name).is_file() and not (REPO / name).is_symlink():  # deleted, not yet in the index
            continue
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target, follow_symlinks=False)  # a link stays one, as git holds it
    return into


def commit_working_tree(into: Path) -> Path:
    """``copy_working_tree`` as the one commit of a new git repository, which is what
    ``pip install git+<URL>`` clones. Returns the repository."""
    copy_working_tree(into)
    git = ["git", "-C", str(into), "-c", "user.name=test", "-c", "user.email=test@example.invalid"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "the working tree"]):
        subprocess.run([*git, *command], capture_output=True, check=True)
    return into


def build_wheel(source: str, into: Path) -> Path:
    """The wheel pip builds from ``source`` (a path, or ``git+file://...``), with the build backend
    pyproject.toml names installed in an isolated build environment, as for any user."""
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(into), source]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (wheel,) = into.glob("*.whl")
    return wheel


def fresh_venv(path: Path) -> Path:
    """A new venv without packages of its own that sees this venv's installed packages (torch is
    several GB: not installed twice) through a .pth file, after its own site-packages, so that what
    is installed into it comes first. Nothing of the checkout is on its path. Returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    query = [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]
    site_packages = Path(subprocess.run(query, capture_output=True, text=True, check=True).stdout.strip())
    # every site-packages folder this interpreter sees, in its order: a venv made by this function
    # (as the floors test's) sees through its own .pth the packages it sees
    folders = [sysconfig.get_path("purelib"), sysconfig.get_path("platlib")]
    ours = dict.fromkeys(folders + [entry for entry in sys.path if Path(entry).name == "site-packages"])
    (site_packages / "project-venv.pth").write_text("".join(f"{folder}\n" for folder in ours))
    return python


def pip_install(python: Path, target: Path, editable: bool = False) -> None:
    """``pip install --no-deps WHEEL`` into the venv of ``python`` (its requirements are there
    already, through fresh_venv's .pth; the wheel's METADATA declares them); with ``editable``,
    ``pip install --no-deps -e FOLDER``, built in an isolated build environment."""
    # --ignore-installed: into this venv even where the project venv (seen through the .pth) has it
    install = ["--no-deps", "--ignore-installed", *(["-e", str(target)] if editable else ["--no-index", str(target)])]
    command = [sys.executable, "-m", "pip", "--python", str(python), "install", *install]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def install_exact(python: Path, requirements: Path) -> None:
    """The exact releases ``requirements`` pins, installed into the venv of ``python`` over what its
    .pth shows (small wheels from the package index; nothing of another venv is touched)."""
    install = ["install", "--quiet", "--no-deps", "--ignore-installed", "-r", str(requirements)]
    command = [sys.executable, "-m", "pip", "--python", str(python), *install]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


# --------------------------------------------------------------------------------------------------
# The documented installs, each in a venv that sees nothing else (tests/workflow/test_installs.py)
# --------------------------------------------------------------------------------------------------

#: The extras whose packages the wheelhouse holds: every documented install without torch.
WHEELHOUSE_EXTRAS = ("convert", "slurm", "remote")
#: The project's own name in its extras' requirements (``slurm = ["imagefolder-lmdb[convert]", ...]``).
PROJECT = "imagefolder-lmdb"


def project_requirements(extras: Iterable[str]) -> list[str]:
    """The requirements of the package and of ``extras`` as pyproject.toml declares them, an extra
    that names the project's other extras followed to theirs."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    found, wanted, seen = list(project["dependencies"]), list(extras), set()
    while wanted:
        extra = wanted.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for line in project["optional-dependencies"][extra]:
            requirement = Requirement(line)
            if requirement.name == PROJECT:
                wanted += sorted(requirement.extras)
            elif line not in found:
                found.append(line)
    return found


def dependency_wheelhouse() -> Path:
    """Wheels of every requirement of the package and of WHEELHOUSE_EXTRAS, made once by ``pip wheel``
    from the package index and kept beside the venv that runs the tests, with a stamp naming what
    they were made for (made again when pyproject.toml asks for other packages). Installs from it
    reach no index (``--no-index --find-links``)."""
    requirements = project_requirements(WHEELHOUSE_EXTRAS)
    wheelhouse, stamp = Path(sys.prefix) / "wheelhouse", "\n".join(requirements) + "\n"
    with open(Path(sys.prefix) / "wheelhouse.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one maker at a time: the workers of a run, other runs
        made = wheelhouse / ".made"
        if made.is_file() and made.read_text() == stamp:
            return wheelhouse
        building = wheelhouse.with_name("wheelhouse.building")
        shutil.rmtree(building, ignore_errors=True)
        pip("wheel", "--quiet", "--wheel-dir", str(building), *requirements)
        (building / ".made").write_text(stamp)
        shutil.rmtree(wheelhouse, ignore_errors=True)
        building.rename(wheelhouse)
    return wheelhouse


def project_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel pip builds from a clone of the working tree, built once per test run (every worker)."""

    def build(folder: Path) -> None:
        build_wheel(f"git+file://{commit_working_tree(folder / 'repository')}", folder / "dist")

    (wheel,) = (built_once(tmp_path_factory, "project-wheel", build) / "dist").glob("*.whl")
    return wheel


def installed_venv(tmp_path_factory: pytest.TempPathFactory, extras: str) -> Path:
    """A venv holding what ``pip install '.[extras]'`` installs (``pip install .`` for ""), and nothing
    else: no system site-packages, no .pth to the project's venv (fresh_venv's), installed offline
    from the wheelhouse. Made once per test run for each install; returns its folder."""
    wheel, wheelhouse = project_wheel(tmp_path_factory), dependency_wheelhouse()

    def build(folder: Path) -> None:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
        target = f"{wheel}[{extras}]" if extras else str(wheel)
        # --isolated: no pip configuration or PIP_* variable adds an index or a folder of wheels
        install = ["--isolated", "--python", str(folder / "bin" / "python"), "install", "--quiet", "--no-index"]
        pip(*install, "--find-links", str(wheelhouse), target)

    return built_once(tmp_path_factory, f"venv-{extras or 'base'}", build)


def run_installed(
    venv: Path, cwd: Path, *command: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """A program of ``venv`` (``imagefolder-lmdb``, ``python``) run from ``cwd`` as a user of that venv
    would: its bin first on PATH, no PYTHONPATH (nothing of the checkout), ``env`` added."""
    drop = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
    environment = {name: value for name, value in os.environ.items() if name not in drop}
    environment["PATH"] = f"{venv / 'bin'}{os.pathsep}{environment['PATH']}"
    program = [str(venv / "bin" / command[0]), *command[1:]]
    return subprocess.run(
        program, cwd=cwd, env={**environment, **(env or {})}, capture_output=True, text=True, timeout=300, check=False
    )


def pip(*args: str) -> subprocess.CompletedProcess[str]:
    """This venv's pip; fails the test with pip's last words when it fails."""
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done
