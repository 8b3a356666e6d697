"""Section 10 of BENCHMARKS.md (issue 32): templates/sampler.md with a run's table and figures."""

from __future__ import annotations

from benchmarks import prose
from benchmarks.interpretation import R, fmt


def order_name(order: list[int] | None) -> str:
    """A contender's name in the table: the full shuffle, or its block-window settings."""
    if order is None:
        return prose.fill("sampler", "full")
    return prose.fill("sampler", "blocks", block_size=order[0], window=order[1], records=order[0] * order[1])


def sampler_rows(sampler: R) -> list[str]:
    rows = []
    for name, row in sampler["rows"].items():
        each = ", ".join(f"{value:,.0f}" for value in row["runs"])
        rows.append(
            f"| {order_name(sampler['orders'][name])} | {row['reads_s']:,.0f} | {each} | **{fmt(row['ratio'], 2)}x** "
            f"| {row['places']:.0f} | {fmt(row['span_mb'], 1)} MB | {row['classes']:.0f} "
            f"| {row['requests']:.0f} | {row['request_kb']:.0f} |"
        )
    return rows


def sampler_section(sampler: R) -> list[str]:
    """Section 10: the template's text and table with this run's figures."""
    sizes = sampler["sizes"]
    records = sizes["batch"] * sizes["batches"]
    text = prose.fill(
        "sampler",
        "section",
        keep_lines=True,
        images=f"{sampler['images']:,}",
        lmdb_mb=f"{sampler['lmdb_bytes'] / 1e6:,.0f}",
        classes=sampler["classes"],
        seed=sampler["seed"],
        batches=sizes["batches"],
        batch=sizes["batch"],
        records=f"{records:,}",
        share=f"{100 * records / sampler['images']:.0f}",
        method=prose.fill("sampler", f"method_{sampler['method']}"),
        still=fmt(100 * sampler["still_cached_after_emptying"], 1),
        repeats=sizes["repeats"],
        rows="\n".join(sampler_rows(sampler)),
    )
    return [*text.rstrip("\n").split("\n"), "", prose.fill("sampler", "notes", **note_figures(sampler))]


def note_figures(sampler: R) -> dict[str, str]:
    """The figures the notes name: each block-window order's ratio, places and classes per batch."""
    rows, names = sampler["rows"], [name for name, order in sampler["orders"].items() if order]
    values = {name: f"{rows['full'][name]:.0f}" for name in ("places", "classes", "requests", "request_kb")}
    values = {f"full_{name}": value for name, value in values.items()}
    values["full_kb"], values["batch"] = values.pop("full_request_kb"), str(sampler["sizes"]["batch"])
    values["load"] = fmt(max(sampler["load_average"]), 1)
    for name in names:
        values[f"{name}_ratio"] = fmt(rows[name]["ratio"], 2)
        values[f"{name}_places"] = f"{rows[name]['places']:.0f}"
        values[f"{name}_classes"] = f"{rows[name]['classes']:.0f}"
        values[f"{name}_requests"] = f"{rows[name]['requests']:.0f}"
    return values
