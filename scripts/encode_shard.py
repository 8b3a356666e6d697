"""Rule encode_shard: check and encode one contiguous slice of the manifest into a part LMDB.

Policy (``encode.reencode``):
- ``auto``: a valid RGB JPEG is stored byte for byte; anything else (PNG even when named .JPEG,
  CMYK, grayscale, MPO, other formats) is re-encoded as ImageFolder's loader would see it:
  ``convert("RGB")``, then JPEG at ``encode.quality``.
- ``always``: every image is re-encoded; ``never``: every readable image is stored as it is.
``encode.max_side`` shrinks larger images (re-encoding them). Every image is checked first
(``encode.check``). Bad ones fail the shard once it has checked all of its images, naming every
one, or with ``on_error: skip`` are left out and listed in the shard report.
"""

import io
import logging
import os
import zlib
from dataclasses import dataclass, field
from typing import Any, TextIO

from PIL import Image, UnidentifiedImageError
from tqdm import tqdm

from archives import MemberReader
from dataset import STORAGE_CODES, record_key
from workflow_io import (
    Sample,
    atomic_lmdb,
    hold_point,
    kept_in_part,
    progress_kwargs,
    read_manifest,
    read_manifest_header,
    run_rule,
    shard_range,
    write_json_atomic,
)

log = logging.getLogger("imagefolder_lmdb.encode_shard")

#: How many bad images a failing shard names in its error (the log has every one).
LISTED_BAD_IMAGES = 20
JPEG_EOI = b"\xff\xd9"
#: Bytes at the end of a JPEG searched for its end-of-image marker (cameras pad after it).
EOI_WINDOW = 4096


class BadImageError(ValueError):
    """An image that cannot be stored; the message names the file and the reason."""


@dataclass(frozen=True)
class EncodeSettings:
    reencode: str = "auto"  # auto | always | never
    quality: int = 95
    max_side: int | None = None
    check: str = "decode"  # decode | header
    on_error: str = "fail"  # fail | skip

    @classmethod
    def from_config(cls, encode: dict[str, Any]) -> "EncodeSettings":
        return cls(**{key: encode[key] for key in cls.__dataclass_fields__})


@dataclass
class Encoded:
    value: bytes
    storage: int  # a key of dataset.STORAGE_REASONS
    width: int
    height: int


def open_checked(data: bytes, check: str) -> Image.Image:
    """Open ``data`` with Pillow (headers only) and run the cheap structural checks; raise on damage.

    The full decode that ``check: decode`` asks for happens later, in :func:`check_decodes` for
    images stored as they are, or in re-encoding for the others.
    """
    image = Image.open(io.BytesIO(data))  # Pillow's decompression-bomb guard stays on
    if check == "decode":
        return image
    if image.format in ("JPEG", "MPO"):
        if JPEG_EOI not in data[-EOI_WINDOW:]:
            raise OSError("JPEG has no end-of-image marker: the file is truncated")
    else:
        Image.open(io.BytesIO(data)).verify()  # checksums and structure, without decoding pixels
    return image


def check_decodes(image: Image.Image) -> None:
    """Decode ``image`` (just opened, not loaded) completely; raise if its compressed stream is
    damaged or cut short. Afterwards ``image`` holds reduced pixels: read its size before.

    A JPEG is decoded at 1/8 scale: libjpeg still reads and Huffman-decodes every coefficient of
    the whole stream (where truncation and corrupt markers are found) but skips the full-size
    inverse DCT, upsampling and colour conversion, which are most of the work of a decode and can
    only fail on data the entropy decoder already accepted (1.4x less CPU measured here).
    """
    if image.format in ("JPEG", "MPO"):
        image.draft(image.mode, (1, 1))
    image.load()


def reencode_reason(image: Image.Image, settings: EncodeSettings) -> str | None:
    """Why ``image`` must be re-encoded (a STORAGE_REASONS value), or None to keep its bytes."""
    if image.format == "MPO":
        reason = "reencoded:mpo"
    elif image.format != "JPEG":
        reason = "reencoded:not-jpeg"
    elif image.mode == "CMYK":
        reason = "reencoded:cmyk"
    elif image.mode in ("L", "LA", "I", "I;16", "1"):
        reason = "reencoded:grayscale"
    elif image.mode != "RGB":
        reason = "reencoded:other-mode"
    elif settings.max_side is not None and max(image.size) > settings.max_side:
        reason = "reencoded:resized"
    elif settings.reencode == "always":
        reason = "reencoded:always"
    else:
        return None
    return reason if settings.reencode != "never" else "stored-as-is"


def shrunk_size(width: int, height: int, max_side: int) -> tuple[int, int]:
    scale = max_side / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def reencode(image: Image.Image, settings: EncodeSettings) -> Image.Image:
    """The pixels ImageFolder's loader would return, optionally shrunk, ready to save as JPEG."""
    rgb = image.convert("RGB")
    if settings.max_side is not None and max(rgb.size) > settings.max_side:
        rgb = rgb.resize(shrunk_size(*rgb.size, settings.max_side), Image.Resampling.LANCZOS)
    return rgb


def encode_image(data: bytes, settings: EncodeSettings) -> Encoded:
    """Decide how to store one image and produce the bytes; raises on an unusable image."""
    image = open_checked(data, settings.check)
    reason = reencode_reason(image, settings)
    if reason is None or reason == "stored-as-is":
        width, height = image.size
        if settings.check == "decode":
            check_decodes(image)
        return Encoded(data, STORAGE_CODES[reason or "passthrough"], width, height)
    rgb = reencode(image, settings)
    buffer = io.BytesIO()
    rgb.save(buffer, format="JPEG", quality=settings.quality)
    return Encoded(buffer.getvalue(), STORAGE_CODES[reason], *rgb.size)


def read_and_encode(reader: MemberReader, sample: Sample, settings: EncodeSettings) -> tuple[Encoded, int]:
    """Encoded image and source size of one sample; BadImageError names the file."""
    try:
        data = reader.read(sample.path, sample.location)
        if not data:
            raise ValueError("an empty file (0 bytes)")
        return encode_image(data, settings), len(data)
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        where = reader.describe(sample.path, sample.location)
        raise BadImageError(f"{where}: {what_went_wrong(exc)}{likely_cause(sample.path)}") from exc


def what_went_wrong(exc: Exception) -> str:
    """The reason, in words (Pillow's own names an in-memory buffer, not the file)."""
    if isinstance(exc, UnidentifiedImageError):
        return "not an image Pillow can read (an unknown format, or damaged from its first bytes)"
    if isinstance(exc, FileNotFoundError):
        return (
            "listed when the source was indexed but gone now: the source changed since. Run the same "
            "command with --forcerun extract to list it again"
        )
    if type(exc) is ValueError:  # ours
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def bad_images_message(bad: list[dict[str, Any]], how_to_go_on: str) -> str:
    listed = "\n".join(f"  {entry['reason']}" for entry in bad[:LISTED_BAD_IMAGES])
    more = f"\n  ... and {len(bad) - LISTED_BAD_IMAGES} more" if len(bad) > LISTED_BAD_IMAGES else ""
    noun = "bad image" if len(bad) == 1 else "bad images"
    return f"{len(bad)} {noun} in this shard:\n{listed}{more}\n{how_to_go_on}"


def how_to_go_on(sample: Sample) -> str:
    in_archive = sample.location is not None and "file" not in sample.location
    fix = (
        "Pack the archive again without the members named (or with them fixed)"
        if in_archive
        else "Fix or remove the files named"
    )
    return (
        f"{fix} and run the same command again, or set encode.on_error: skip to leave bad images out "
        "(they are listed in the report)."
    )


def likely_cause(path: str) -> str:
    """A hint for bad files that are no image at all but look like one to ImageFolder."""
    if os.path.basename(path).startswith("._"):
        # macOS writes "._name" resource-fork files beside every file it copies to other filesystems
        # or packs into tars; they carry the image's extension, so ImageFolder lists them too
        return " (a macOS metadata file, not an image: delete the ._* files from the source)"
    return ""


@dataclass
class ShardReport:
    """What one shard stored: per-record columns, skipped images and their reasons."""

    shard: int
    shards: int
    start: int
    stop: int
    index: list[int] = field(default_factory=list)
    width: list[int] = field(default_factory=list)
    height: list[int] = field(default_factory=list)
    crc32: list[int] = field(default_factory=list)
    storage: list[int] = field(default_factory=list)
    source_bytes: list[int] = field(default_factory=list)
    stored_bytes: list[int] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)

    def add(self, index: int, encoded: Encoded, source_size: int) -> None:
        self.index.append(index)
        self.width.append(encoded.width)
        self.height.append(encoded.height)
        self.crc32.append(zlib.crc32(encoded.value))
        self.storage.append(encoded.storage)
        self.source_bytes.append(source_size)
        self.stored_bytes.append(len(encoded.value))

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def encode_shard(
    manifest_path: str,
    part_path: str,
    report_path: str,
    shard: int,
    shards: int,
    settings: EncodeSettings,
    progress: dict[str, Any],
) -> ShardReport:
    header = read_manifest_header(manifest_path)
    start, stop = shard_range(header.count, shards, shard)
    report = ShardReport(shard=shard, shards=shards, start=start, stop=stop)
    log.info("shard %d of %d: images %d..%d of %d from %s", shard, shards, start, stop - 1, header.count, header.root)

    reader = MemberReader(header.root, header.containers)
    # Only re-encoded images go into the part (see SOURCE_BYTES_CODES): a small fraction of the
    # source, unless everything is re-encoded. The map grows if this guess is short.
    expected = sum(source_size(reader, s) for s in read_manifest(manifest_path, start, stop))
    if settings.reencode != "always" and settings.max_side is None:
        expected //= 8
    advice = ""  # what to do about the bad images, once one is found
    with atomic_lmdb(part_path, expected_bytes=expected) as writer:
        samples = read_manifest(manifest_path, start, stop)
        for position, sample in enumerate(
            tqdm(samples, total=stop - start, desc=f"shard {shard}", unit="img", **progress)
        ):
            if position == (stop - start) // 2:
                hold_point(f"encode_shard:{shard}")
            try:
                encoded, size = read_and_encode(reader, sample, settings)
            except BadImageError as exc:
                log.warning("%s %s", "bad image:" if settings.on_error == "fail" else "skipped", exc)
                report.skipped.append({"index": sample.index, "path": sample.path, "reason": str(exc)})
                advice = how_to_go_on(sample)
                continue
            if kept_in_part(encoded.storage):
                writer.append(record_key(sample.index), encoded.value)
            report.add(sample.index, encoded, size)
        if report.skipped and settings.on_error == "fail":
            # raised after checking the whole shard, so that one round of fixes covers all of it
            raise BadImageError(bad_images_message(report.skipped, advice))
    reader.close()
    write_json_atomic(report_path, report.as_json())
    log.info("stored %d images, skipped %d", len(report.index), len(report.skipped))
    return report


def source_size(reader: MemberReader, sample: Sample) -> int:
    """Bytes of a sample's source, 0 if it cannot be found (that is reported when it is read)."""
    if sample.location is not None and "size" in sample.location:
        return int(sample.location["size"])
    path = os.path.join(reader.root, (sample.location or {}).get("file", sample.path))
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def main(smk: Any, stream: TextIO) -> None:
    encode_shard(
        smk.input.manifest,
        smk.output.part,
        smk.output.report,
        shard=int(smk.wildcards.shard),
        shards=int(smk.params.shards),
        settings=EncodeSettings.from_config(smk.params.encode),
        progress=progress_kwargs(stream),
    )


if __name__ == "__main__":
    run_rule(main, snakemake)  # type: ignore[name-defined]  # noqa: F821
