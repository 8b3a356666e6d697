"""The user documentation as the tests read it: README.md and docs/*.md, their blocks marked
``<!-- runnable -->``, their sections, headings and links, and the ``pip install`` lines they show.

A runnable block is a fenced ``bash`` or ``python`` block right after a line ``<!-- runnable -->``.
tests/workflow/test_readme.py runs them all in one copy of the repository, in page order: README.md
first (its ``make demo`` makes the data every later block reads), then docs/*.md by file name.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from . import REPO

#: The documentation pages, in the order their runnable blocks run.
PAGES: list[Path] = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
README = (REPO / "README.md").read_text()
RUNNABLE = re.compile(r"<!-- runnable -->\n```(bash|python)\n(.*?)```", re.S)
FENCED = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
HEADING = re.compile(r"^(#{1,6}) (.+?)\s*$", re.M)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)\)")


@dataclass(frozen=True)
class Block:
    """One runnable block: the page it is on (relative to the repository), its kind, its code."""

    page: str
    kind: str
    code: str


def page_name(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def page_text(name: str) -> str:
    """The text of a page, by its path relative to the repository (``docs/cluster.md``)."""
    return (REPO / name).read_text()


def runnable() -> list[Block]:
    """Every runnable block of every page, in the order they run."""
    return [Block(page_name(path), kind, code) for path in PAGES for kind, code in RUNNABLE.findall(path.read_text())]


def runnable_blocks() -> list[tuple[str, str]]:
    """(kind, code) of every runnable block, in order; kind is "bash" or "python"."""
    return [(block.kind, block.code) for block in runnable()]


def fenced_blocks(text: str, language: str) -> list[str]:
    """The code of every fenced block of ``language`` (``yaml``, ``bash``, ...) in ``text``."""
    return [code for lang, code in FENCED.findall(text) if lang == language]


def without_code(text: str) -> str:
    """``text`` without fenced blocks and inline code: what is left is prose, headings and links."""
    return INLINE_CODE.sub("", FENCED.sub("", text))


def section(text: str, heading: str) -> str:
    """The text under ``heading`` (a whole heading line, e.g. ``"## Resources"``), up to the next
    heading of the same or a higher level."""
    level = len(heading) - len(heading.lstrip("#"))
    start = text.index(f"\n{heading}\n") + len(heading) + 2
    following = re.compile(rf"^#{{1,{level}}} ", re.M).search(text, start)
    return text[start : following.start() if following else len(text)]


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = INLINE_CODE.sub(lambda code: code.group(0).strip("`"), heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors of every heading in ``text`` (a repeated heading gets -1, -2, ... as on GitHub)."""
    seen: dict[str, int] = {}
    found = set()
    for _, title in HEADING.findall(FENCED.sub("", text)):
        base = slug(title)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(text: str) -> list[str]:
    """The target of every Markdown link and image in ``text``'s prose (code is not scanned)."""
    return LINK.findall(without_code(text))


#: A pip install command in code, up to the end of its code span or line, a comment, or words about it
#: (`` (torch, torchvision)``, ``; in a checkout ...``) in a Python comment.
PIP_INSTALL = re.compile(r"(?:\S*/)?pip install [^`#\n;(]*")
#: pip's options that take a value, as the install lines give them.
PIP_VALUED = {"--index-url", "--extra-index-url", "-r", "--requirement", "-c", "--constraint"}


@dataclass(frozen=True)
class InstallLine:
    """One ``pip install`` command of a page: the project with its extras (``project``: None where the
    line installs other packages only), the other requirements it names, and its options."""

    text: str
    project: frozenset[str] | None  # '.[convert,remote]' -> {"convert", "remote"}; '.' -> set()
    packages: tuple[str, ...]  # other requirements, as written: torch, torchvision==0.29.1
    options: dict[str, str]  # --index-url URL, -r FILE


def install_lines(text: str = README) -> list[InstallLine]:
    """Every ``pip install`` command ``text`` shows in code (fenced or inline), without its comment."""
    fenced = [code for _, code in FENCED.findall(text)]
    inline = [span.strip("`") for span in INLINE_CODE.findall(FENCED.sub("", text))]
    found = [match.group(0).strip() for code in fenced + inline for match in PIP_INSTALL.finditer(code)]
    return [parsed_install(line) for line in found]


def parsed_install(line: str) -> InstallLine:
    """``pip install '.[torch]'``, ``pip install torch torchvision --index-url URL`` as InstallLine."""
    words = shlex.split(line)
    words = words[words.index("install") + 1 :]
    options, targets = {}, []
    while words:
        word = words.pop(0)
        if word in PIP_VALUED:
            options[word] = words.pop(0)
        else:
            targets.append(word)
    project = [target for target in targets if target.startswith((".", "imagefolder-lmdb"))]
    packages = tuple(target for target in targets if target not in project)
    if not project:
        return InstallLine(line, None, packages, options)
    extras = re.search(r"\[([^\]]*)\]", project[0])
    return InstallLine(line, frozenset(extras.group(1).split(",") if extras else ()), packages, options)
