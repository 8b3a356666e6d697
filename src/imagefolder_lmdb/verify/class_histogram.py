"""The class-count histogram of a split (rule report_split's, and a change's: run/change.py), drawn
from its verify report's class counts."""

from PIL import Image, ImageDraw, ImageFont

from imagefolder_lmdb.writing.atomic import atomic_file

WIDTH, HEIGHT, MARGIN = 1000, 360, 40
#: Up to this many classes, each bar has its class name under it (written downwards); beyond, the
#: names would not fit and the caption names only the smallest and the largest class.
NAMED_BARS = 64
#: The band under the bars that holds the names, and the characters of a name shown.
LABEL_BAND, LABEL_CHARS = 120, 18


def bar_names(class_counts: dict[str, int]) -> list[str] | None:
    """Each class's name as written under its bar (shortened), or None where there are too many."""
    if not 0 < len(class_counts) <= NAMED_BARS:
        return None
    return [name if len(name) <= LABEL_CHARS else name[: LABEL_CHARS - 1] + "…" for name in class_counts]


def class_histogram(class_counts: dict[str, int], output: str, title: str) -> None:
    """Images per class as bars, in class-index order, the class names under them (up to
    NAMED_BARS classes), the min/max named."""
    counts = list(class_counts.values())
    names = bar_names(class_counts)
    band = LABEL_BAND if names else 0
    image = Image.new("RGB", (WIDTH, HEIGHT + band), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=14)
    top = max(counts, default=1) or 1
    plot_width = WIDTH - 2 * MARGIN
    bar = plot_width / max(len(counts), 1)
    for k, count in enumerate(counts):
        x0 = MARGIN + k * bar
        height = (HEIGHT - 2 * MARGIN) * count / top
        gap = bar * 0.15 if bar >= 4 else 0  # separate bars only where there is room
        draw.rectangle((x0, HEIGHT - MARGIN - height, x0 + max(bar - gap, 1), HEIGHT - MARGIN), fill=(60, 110, 180))
    draw.line((MARGIN, HEIGHT - MARGIN, WIDTH - MARGIN, HEIGHT - MARGIN), fill="black")
    for k, name in enumerate(names or []):
        name_under_bar(image, name, MARGIN + k * bar, bar)
    low = min(class_counts, key=class_counts.__getitem__) if counts else "-"
    high = max(class_counts, key=class_counts.__getitem__) if counts else "-"
    caption = f"{title}: {len(counts)} classes, {sum(counts)} images; min {low} ({class_counts.get(low, 0)}), "
    caption += f"max {high} ({class_counts.get(high, 0)})"
    draw.text((MARGIN, 10), caption, fill="black", font=font)
    draw.text(
        (MARGIN, HEIGHT + band - MARGIN + 8),
        "classes in index order; bar height: images (top of plot = max)",
        fill="black",
        font=font,
    )
    with atomic_file(output, "wb") as stream:
        image.save(stream, format="PNG")


def name_under_bar(image: Image.Image, name: str, x0: float, bar: float) -> None:
    """``name`` written downwards, centred under the bar that starts at ``x0``."""
    size = max(8, min(13, int(bar * 0.8)))
    font = ImageFont.load_default(size=size)
    left, top, right, bottom = (int(edge) for edge in font.getbbox(name))
    text = Image.new("L", (right - left + 2, bottom - top + 2), 0)
    ImageDraw.Draw(text).text((1 - left, 1 - top), name, fill=255, font=font)
    upright = text.rotate(-90, expand=True)  # reads top to bottom
    x = int(x0 + (bar - upright.width) / 2)
    image.paste((40, 40, 40), (x, HEIGHT - MARGIN + 4), upright)
