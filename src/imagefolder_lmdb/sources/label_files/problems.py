"""How a label file's problems are worded: one line each, naming the file (and row), what is wrong,
and the fix."""

from __future__ import annotations

from collections.abc import Sequence

#: How many examples a message lists (of images without a row, of rows without an image).
EXAMPLES = 3


class LabelFileError(ValueError):
    """A label file that cannot label the images as it stands; the message is one line."""


def first_few(names: Sequence[str], examples: int = EXAMPLES) -> str:
    """``'a', 'b', 'c', ...``: the first ``examples`` of ``names``, quoted."""
    shown = ", ".join(repr(name) for name in names[:examples])
    return shown + (", ..." if len(names) > examples else "")


def did_you_mean(wanted: str, columns: Sequence[str]) -> str:
    """`` (did you mean 'label'?)`` for the column closest to ``wanted``; empty when none is close."""
    import difflib  # only on this error's path: every rule job imports this module

    close = difflib.get_close_matches(wanted, columns, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
