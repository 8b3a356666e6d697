"""ImageFolder's listing arguments as split settings: ``extensions``, ``allow_empty``, ``is_valid_file``.

Named and meant as torchvision names them: ``DatasetFolder(root, default_loader, extensions=...)``,
``ImageFolder(root, is_valid_file=..., allow_empty=...)``. They apply to a folder source of layout
imagefolder, the one source ImageFolder itself could be given (config/check.py refuses them for an
archive, whose members have no path ImageFolder would pass, and for the other layouts, which do not
list folders). ``is_valid_file`` is named ``module:qualname``: jobs run in other processes (on a
cluster, on other nodes), so the predicate is imported there by name, never pickled.

The predicate gets what ImageFolder passes for the folder's absolute path as ``root``:
``os.path.join(root, class, ..., name)``. The dataset records the predicate's name and a digest of
its source text (``recipe``), so a changed body is seen as a changed setting; a change in what the
body calls is not.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.machinery
import importlib.util
import inspect
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

#: torchvision's IMG_EXTENSIONS (kept equal by tests/unit/test_archives.py, through tree.py).
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def is_image(path: str) -> bool:
    """torchvision's ``has_file_allowed_extension(path, IMG_EXTENSIONS)``."""
    return path.lower().endswith(IMAGE_EXTENSIONS)


#: The split keys, as config/schema.yaml names them.
KEYS = ("extensions", "allow_empty", "is_valid_file")
#: How a name that cannot be imported is fixed.
IMPORT_HINT = (
    "name a function defined at the top level of a module that the jobs can import: a file beside where "
    "you run `imagefolder-lmdb convert` or convert() (that folder is put on PYTHONPATH), or an installed "
    "module; with snakemake itself, put its folder on PYTHONPATH"
)

#: Where the three settings apply, said when they are set elsewhere.
FOLDER_ONLY = (
    "extensions, allow_empty and is_valid_file apply to a folder of layout imagefolder (what ImageFolder "
    "lists); unpack an archive and point source at its folder, or remove them"
)


class PredicateError(ValueError):
    """``is_valid_file`` names nothing importable, or a callable that cannot be imported by name."""


@dataclass(frozen=True)
class ListingOptions:
    """The three settings of a split: None / False / None are ImageFolder's defaults."""

    extensions: tuple[str, ...] | None = None
    allow_empty: bool = False
    is_valid_file: str | None = None  # "module:qualname"

    @classmethod
    def from_split(cls, split: dict[str, Any]) -> ListingOptions:
        extensions = split.get("extensions")
        return cls(
            tuple(extensions) if extensions is not None else None,
            bool(split.get("allow_empty")),
            split.get("is_valid_file"),
        )

    @classmethod
    def from_param(cls, param: dict[str, Any] | None) -> ListingOptions:
        return cls.from_split(param or {})

    @property
    def is_default(self) -> bool:
        return self == ListingOptions()

    def as_param(self) -> dict[str, Any] | None:
        """The settings that are not at their defaults, as plain data; None when all are (so a rule's
        params, and a dataset's record, read as before these settings existed)."""
        found: dict[str, Any] = {}
        if self.extensions is not None:
            found["extensions"] = list(self.extensions)
        if self.allow_empty:
            found["allow_empty"] = True
        if self.is_valid_file is not None:
            found["is_valid_file"] = self.is_valid_file
        return found or None

    def accepts(self) -> Callable[[str], bool]:
        """ImageFolder's test of a file path: the predicate, else the extensions (torchvision's
        ``has_file_allowed_extension``: the lower-cased path ends with one of them, as given)."""
        if self.is_valid_file is not None:
            return load_predicate(self.is_valid_file)
        extensions = self.extensions if self.extensions is not None else IMAGE_EXTENSIONS
        return lambda path: path.lower().endswith(extensions)

    def recipe(self) -> dict[str, Any]:
        """What made_from records: nothing at the defaults; the predicate by name and source digest."""
        found = self.as_param()
        if found is None:
            return {}
        if self.is_valid_file is not None:
            found["is_valid_file"] = {"name": self.is_valid_file, "source_sha256": source_digest(self.is_valid_file)}
        return {"listing": found}


#: ImageFolder's own listing: every default.
DEFAULT_LISTING = ListingOptions()


def load_predicate(name: str) -> Callable[[str], bool]:
    """The callable ``module:qualname`` names; PredicateError saying how to name one otherwise."""
    module_name, colon, qualname = name.partition(":")
    if not colon or not module_name or not qualname:
        raise PredicateError(
            f"is_valid_file {name!r}: write it as module:function (e.g. my_filters:keep); {IMPORT_HINT}"
        )
    try:
        found: Any = imported(module_name)
        for part in qualname.split("."):
            found = getattr(found, part)
    except ImportError as exc:
        raise PredicateError(f"is_valid_file {name!r}: cannot import {module_name} ({exc}); {IMPORT_HINT}") from None
    except AttributeError:
        raise PredicateError(f"is_valid_file {name!r}: {module_name} has no {qualname}; {IMPORT_HINT}") from None
    if not callable(found):
        raise PredicateError(f"is_valid_file {name!r} is a {type(found).__name__}, not a function")
    return found


def imported(module_name: str) -> ModuleType:
    """The module of that name: imported, or, where only the jobs' PYTHONPATH holds it (the folder a
    command-line conversion was started from: ``caller_folder_importable``), loaded from there for a
    look, this process's ``sys.path`` and ``sys.modules`` untouched."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name.partition(".")[0]:
            raise
        found = loaded_from(module_name, [path for path in os.environ.get("PYTHONPATH", "").split(os.pathsep) if path])
        if found is None:
            raise
        return found


def loaded_from(module_name: str, folders: list[str]) -> ModuleType | None:
    """Module ``module_name`` found in ``folders`` and run, registered nowhere (None: not there)."""
    module, search = None, folders
    for part in module_name.split("."):
        spec = importlib.machinery.PathFinder.find_spec(part, search)
        if spec is None or spec.loader is None:
            return None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        search = list(spec.submodule_search_locations or [])
    return module


def source_digest(name: str) -> str:
    """SHA-256 of the predicate's source text ("unknown" where Python cannot show it)."""
    try:
        text = inspect.getsource(load_predicate(name))
    except (OSError, TypeError):
        return "unknown"
    return hashlib.sha256(text.encode()).hexdigest()


def predicate_file(name: str) -> str | None:
    """The file the predicate ``name`` is defined in, for messages (None where Python cannot say)."""
    try:
        return inspect.getsourcefile(load_predicate(name))
    except (PredicateError, TypeError):
        return None


def importable_name(predicate: Callable[[str], bool]) -> str:
    """``module:qualname`` of a callable that another process can import by that name; PredicateError
    naming the fix for a lambda, a function defined inside another, or one of ``__main__``."""
    module, qualname = getattr(predicate, "__module__", None), getattr(predicate, "__qualname__", None)
    what = f"is_valid_file={getattr(predicate, '__name__', predicate)!r}"
    if not module or not qualname:
        raise PredicateError(f"{what} has no importable name; {IMPORT_HINT}")
    if "<lambda>" in qualname or "<locals>" in qualname:
        raise PredicateError(f"{what} is a lambda or a function defined inside another: {IMPORT_HINT}")
    if module == "__main__":
        raise PredicateError(f"{what} is defined in __main__, which the jobs cannot import: {IMPORT_HINT}")
    name = f"{module}:{qualname}"
    if load_predicate(name) is not predicate:
        raise PredicateError(f"{what}: {name} names another object; {IMPORT_HINT}")
    return name


@contextlib.contextmanager
def caller_folder_importable(wanted: bool) -> Iterator[None]:
    """While a conversion that names a predicate (``wanted``) plans and runs: the folder it was started
    from on the jobs' PYTHONPATH (the plan loads the predicate from there to check it: ``imported``).
    Only then, so that no file of that folder shadows a module of the workflow's otherwise."""
    if not wanted:
        yield
        return
    folder, previous = os.getcwd(), os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([folder, *([previous] if previous else [])])
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = previous


def names_a_predicate(*given: Any) -> bool:
    """Whether settings (a config mapping, settings, a config file's path) name ``is_valid_file``."""
    for item in given:
        if isinstance(item, str | os.PathLike) and os.path.isfile(item):
            with open(item, encoding="utf-8", errors="replace") as stream:
                item = stream.read()
        if "is_valid_file" in repr(item) or "is-valid-file" in repr(item):
            return True
    return False
