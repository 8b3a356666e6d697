"""The end-of-run summary: per split, what was stored and where the outputs are."""

from __future__ import annotations

import json
import os
from typing import Any


def split_summary(name: str, results: str) -> list[str]:
    report_path = os.path.join(results, f"{name}.verify.json")
    if not os.path.exists(report_path):
        return [f"{name}: not built in this run"]
    with open(report_path, encoding="utf-8") as stream:
        report = json.load(stream)
    storage = ", ".join(f"{reason} {count}" for reason, count in report["storage"].items())
    status = "verified" if report["ok"] else "VERIFY FAILED"
    return [
        f"{name}: {report['images']} images, {report['classes']} classes, {status} "
        f"({report['checked']['records']} records checked)",
        f"  bytes: {report['stored_bytes'] / 1e6:.1f} MB stored from {report['source_bytes'] / 1e6:.1f} MB source "
        f"({report['stored_to_source_ratio']}x)",
        f"  stored: {storage}; skipped: {len(report['skipped'])}",
        f"  outputs: {os.path.join(results, name + '.lmdb')}, {report_path}, "
        f"{os.path.join(results, name + '.contact.png')}",
    ]


def summary_lines(config: dict[str, Any]) -> list[str]:
    lines = ["", "Summary"]
    for name in config["splits"]:
        lines.extend(split_summary(name, config["results"]))
    return lines
