"""Real photographs for the decode-at-size tests (issue 45): JPEG photos of 2560x1600 (4.1 MP) from
Debian's ``plasma-workspace-wallpapers`` (KDE's wallpapers; .ci/run installs it where apt works).
Generated images carry film grain, which understates what a reduced decode keeps; these do not.

Chosen by looking at them: the photographs among the package's RGB JPEGs (two progressive), not its
drawings or renders. ``gnome-backgrounds`` holds only WebP and SVG drawings, no JPEG photos."""

from __future__ import annotations

from pathlib import Path

WALLPAPERS = Path("/usr/share/wallpapers")
PHOTOS = (
    "BytheWater",
    "ColdRipple",
    "ColorfulCups",  # progressive
    "DarkestHour",
    "EveningGlow",
    "FallenLeaf",
    "Kite",
    "OneStandsOut",
    "Path",
    "summer_1am",  # progressive
)
INSTALL = "apt-get install plasma-workspace-wallpapers (.ci/run does where apt works)"


def photo_paths() -> list[Path]:
    """The photographs found here: each folder's full-size JPEG (the other names link to it)."""
    found = []
    for name in PHOTOS:
        images = sorted((WALLPAPERS / name / "contents" / "images").glob("*.jpg"))
        if images:
            found.append(max(images, key=lambda p: p.stat().st_size).resolve())
    return sorted(set(found))
