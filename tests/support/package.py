"""The repository as a user gets it: its files as a commit would hold them, a wheel pip builds from
a clone of them, and a fresh venv that the wheel is installed into."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from . import REPO


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
