"""The words of BENCHMARKS.md: the templates under benchmarks/templates/, filled in with a run's figures.

Each part of the document has one file there: document.md (the opening, reruns, how to reproduce),
summary.md, and one per section (convert.md, merge.md, size.md, reader.md, memory.md, scale.md,
archives.md, cold.md). A file holds named blocks, each opened by a line ``<!-- name -->``: a few
paragraphs, one paragraph, or a fragment of one, with string.Template placeholders (``$name``);
what comes before a file's first block is a comment for its readers. Which block applies and the
values of its placeholders are decided in Python: interpretation.py for the summary, notes.py for
the notes under each section's table, report.py for the frame and section 8. This module only loads
blocks and fills them in.

The files are wrapped for reading, and BENCHMARKS.md keeps each paragraph and each list item on one
line: filling a block joins the lines of a paragraph, and an item's indented continuation lines,
with a space; headings, table rows and fenced code stay as written. Section 8's text keeps its line
breaks (``keep_lines``).
"""

from __future__ import annotations

import re
import string
from functools import cache
from pathlib import Path

TEMPLATES = Path(__file__).with_name("templates")
#: The line that opens a block.
BLOCK = re.compile(r"^<!-- ([a-z_]+) -->\n", re.MULTILINE)
#: Lines that nothing joins onto: headings, table rows, code fences.
STANDALONE = ("#", "|", "```")
#: Lines that start a line of their own: those and list items.
OWN_LINE = (*STANDALONE, "- ")


@cache
def blocks(part: str) -> dict[str, str]:
    """The blocks of templates/<part>.md by name, as written, without the blank lines around them."""
    pieces = BLOCK.split((TEMPLATES / f"{part}.md").read_text())
    return {name: text.strip("\n") for name, text in zip(pieces[1::2], pieces[2::2], strict=True)}


def continues(previous: str, line: str) -> bool:
    """Whether ``line`` goes on the paragraph or list item of ``previous``."""
    return bool(previous and line) and not previous.startswith(STANDALONE) and not line.startswith(OWN_LINE)


def joined(text: str) -> str:
    """``text`` with each paragraph and list item on one line; fenced code as written."""
    lines: list[str] = []
    fenced = False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and lines and continues(lines[-1], line):
            lines[-1] += " " + line.lstrip()
            continue
        lines.append(line)
    return "\n".join(lines)


def fill(part: str, block: str, /, *, keep_lines: bool = False, **values: object) -> str:
    """Block ``block`` of templates/<part>.md, its placeholders replaced by ``values``."""
    text = blocks(part)[block]
    return string.Template(text if keep_lines else joined(text)).substitute(values)
