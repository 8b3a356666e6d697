"""The competitor: the method of the widely copied "ImageFolder to LMDB" article, re-implemented
as the benchmark baseline (write-only; nothing in this project reads these files).

    python benchmarks/baseline_article.py SOURCE_TREE OUT.lmdb --workers 2

1. List the tree as torchvision's ImageFolder does.
2. A multiprocessing Pool, one contiguous chunk per worker: each worker opens every image with
   PIL, converts it to RGB, re-encodes it as JPEG at quality 95 and puts the pickled
   ``(bytes, label)`` under the key ``str(index)`` into its own LMDB, committing every 1,000 puts.
3. Merge: the per-worker LMDBs are read back and put into one LMDB, with the pickled
   ``__keys__`` and ``__len__`` entries of the folder2lmdb layout.

Pickle is the competitor's choice and only written here; it is what the project avoids.
"""

from __future__ import annotations

import argparse
import io
import os
import pickle
import shutil
import time
from multiprocessing import Pool
from pathlib import Path

import lmdb
from PIL import Image

#: The article's settings: quality 95, a commit every 1,000 puts, a generous fixed map size.
QUALITY = 95
COMMIT_EVERY = 1000
MAP_SIZE = 1 << 40  # address space only: without writemap the file grows with the data


def list_images(root: str) -> list[tuple[str, int]]:
    """(path, label) pairs in ImageFolder order, as the article gets them from ImageFolder."""
    from torchvision.datasets.folder import IMG_EXTENSIONS, find_classes, make_dataset

    _, class_to_idx = find_classes(root)
    return make_dataset(root, class_to_idx, extensions=IMG_EXTENSIONS)


def reencode(path: str, quality: int = QUALITY) -> bytes:
    """Every image is decoded and encoded again, whatever it was."""
    with open(path, "rb") as stream:
        image = Image.open(stream).convert("RGB")
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


def open_writable(path: str) -> lmdb.Environment:
    return lmdb.open(path, subdir=False, map_size=MAP_SIZE, meminit=False)


def write_part(job: tuple[str, int, list[tuple[str, int]]]) -> int:
    """One worker: its chunk of images into its own LMDB; returns the number of records."""
    part_path, first_index, samples = job
    env = open_writable(part_path)
    txn = env.begin(write=True)
    for offset, (path, label) in enumerate(samples):
        txn.put(str(first_index + offset).encode("ascii"), pickle.dumps((reencode(path), label)))
        if (offset + 1) % COMMIT_EVERY == 0:
            txn.commit()
            txn = env.begin(write=True)
    txn.commit()
    env.sync()
    env.close()
    return len(samples)


def chunks(samples: list[tuple[str, int]], workers: int) -> list[tuple[int, list[tuple[str, int]]]]:
    """Contiguous chunks, one per worker, with the index of their first sample."""
    bounds = [len(samples) * k // workers for k in range(workers + 1)]
    return [(bounds[k], samples[bounds[k] : bounds[k + 1]]) for k in range(workers)]


def merge_parts(parts: list[str], output: str, count: int) -> None:
    """Every part's records into one LMDB (keys "0", "1", ... are not in byte order: B-tree inserts)."""
    env = open_writable(output)
    txn = env.begin(write=True)
    written = 0
    for part in parts:
        source = lmdb.open(part, subdir=False, readonly=True, lock=False)
        with source.begin() as read:
            for key, value in read.cursor():
                txn.put(key, value)
                written += 1
                if written % COMMIT_EVERY == 0:
                    txn.commit()
                    txn = env.begin(write=True)
        source.close()
    keys = [str(i).encode("ascii") for i in range(count)]
    txn.put(b"__keys__", pickle.dumps(keys))
    txn.put(b"__len__", pickle.dumps(count))
    txn.commit()
    env.sync()
    env.close()


def convert(source: str, output: str, workers: int) -> int:
    samples = list_images(source)
    scratch = Path(output + ".parts")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    parts = [str(scratch / f"part{k}.lmdb") for k in range(workers)]
    jobs = [(part, first, chunk) for part, (first, chunk) in zip(parts, chunks(samples, workers), strict=True)]
    with Pool(workers) as pool:
        written = sum(pool.map(write_part, jobs))
    merge_parts(parts, output, written)
    shutil.rmtree(scratch)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", help="an ImageFolder tree")
    parser.add_argument("output", help="the LMDB file to write")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    start = time.perf_counter()
    count = convert(args.source, args.output, args.workers)
    print(f"{count} images in {time.perf_counter() - start:.1f} s -> {args.output}")


if __name__ == "__main__":
    main()
