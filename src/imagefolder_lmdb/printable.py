"""Names in messages. A file name that is not valid UTF-8 is kept as Python's file system functions
give it (the bytes as surrogate escapes, PEP 383) and stored so; printing it as it is fails on any
UTF-8 stream, so every message shows it through ``printable`` (``caf\\xe9.jpg``)."""

from __future__ import annotations


def printable(name: str) -> str:
    """``name`` with the bytes that are not valid UTF-8 shown escaped (``\\xe9``), the rest as it is."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
