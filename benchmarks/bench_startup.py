"""Part of section 6: the fixed cost of every job. Each rule's script is a new Python process, so
what the workflow's modules import is paid once per job (per shard: 272 jobs for ImageNet with
the shipped config). Measured in fresh processes, alternating:
- ``writer_scripts``: the steps encode_shard, merge and write_meta imported (what those jobs import);
- ``torch``: ``import torch`` alone, for scale: what each job paid while dataset.py imported it;
- ``dataset_class``: ``LMDBDataset`` built, as a training process or a spawned DataLoader worker
  does on first use (torch, and torchvision where installed: its base is then ImageFolder; issue 53).
Each child reports its own CPU seconds and peak resident memory, and whether torch got imported.
"""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

from benchmarks.bench_common import BIN, median, rotated

CHILD = """
import json, sys, time
start = time.process_time()
{imports}
# VmHWM, not ru_maxrss: the latter may carry the forking parent's peak over the exec
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({{"cpu": time.process_time() - start, "max_rss_mb": peak / 1024, "torch": "torch" in sys.modules}}))
"""
IMPORTS = {
    "writer_scripts": "from imagefolder_lmdb.steps import encode_shard, merge, write_meta",
    "torch": "import torch",
    "dataset_class": "from imagefolder_lmdb import LMDBDataset",
}


def import_once(variant: str) -> dict[str, float]:
    code = CHILD.format(imports=IMPORTS[variant])
    start = time.perf_counter()
    completed = subprocess.run([str(BIN / "python"), "-c", code], check=True, capture_output=True, text=True)
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    result["wall"] = time.perf_counter() - start
    return result


def measure_startup(repeats: int) -> dict[str, Any]:
    runs: dict[str, list[dict[str, float]]] = {variant: [] for variant in IMPORTS}
    for turn in range(repeats):
        for variant in rotated(list(IMPORTS), turn):
            runs[variant].append(import_once(variant))
    return {
        variant: {key: median([r[key] for r in rs]) for key in ("wall", "cpu", "max_rss_mb")}
        | {"imports_torch": bool(rs[-1]["torch"])}
        for variant, rs in runs.items()
    }
