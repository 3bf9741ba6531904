"""The lean install (issue 45): ``import loop_stepper`` ÷ ``import torch`` (whole processes, one
run of this script, the same venv), and the size on disk of what ``pip install loop-stepper``
installs beside what ``pip install "loop-stepper[server]"`` does, read from the installed
distributions' own file lists (the requirement closures, torch's dependencies included).

    .venv/bin/python bench/lean.py [--runs 9]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from loop_stepper.cli import requirement_name

MB = 1024 * 1024


def import_seconds(module: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
    return time.perf_counter() - started


def closure(name: str, extras: set[str], seen: set[str] | None = None) -> set[str]:
    """``name`` and every distribution it requires (with ``extras``), as installed here."""
    seen = set() if seen is None else seen
    key = name.lower().replace("_", "-")
    if key in seen:
        return seen
    try:
        dist = metadata.distribution(key)
    except metadata.PackageNotFoundError:
        return seen
    seen.add(key)
    for line in dist.requires or []:
        requirement, _, marker = line.partition(";")
        wanted = re.findall(r"""extra\s*==\s*["']([^"']+)["']""", marker)
        if wanted and not set(wanted) & extras:
            continue
        if "sys_platform" in marker and "linux" not in marker and "==" in marker:
            continue
        inner = set(re.findall(r"\[([^\]]+)\]", requirement.split(";")[0])[:1] or [])
        subextras = {e.strip() for group in inner for e in group.split(",")}
        closure(requirement_name(requirement).lower(), subextras, seen)
    return seen


def size(names: set[str]) -> int:
    total = 0
    for name in names:
        for file in metadata.distribution(name).files or []:
            path = file.locate()
            if os.path.isfile(path):
                total += os.path.getsize(path)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    runs = parser.parse_args().runs
    import_seconds("loop_stepper")  # warm the file cache
    torch_s, ours_s = [], []
    for _ in range(runs):  # interleaved, so a drifting machine moves both alike
        torch_s.append(import_seconds("torch"))
        ours_s.append(import_seconds("loop_stepper"))
    lean = closure("loop-stepper", set()) - {"loop-stepper"}
    server = closure("loop-stepper", {"server"}) - {"loop-stepper"}
    notebook = closure("loop-stepper", {"notebook"}) - {"loop-stepper"}
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores; {runs} runs each, medians\n")
    print("| measure | value | ratio |")
    print("|---|---:|---:|")
    t, o = statistics.median(torch_s), statistics.median(ours_s)
    print(f"| `python -c 'import torch'` | {t * 1000:.0f} ms | 1.00 |")
    print(f"| `python -c 'import loop_stepper'` | {o * 1000:.0f} ms | {o / t:.2f} |")
    lean_b, server_b, nb_b = size(lean), size(server), size(notebook)
    print(f"| lean install: {len(lean)} distributions | {lean_b / MB:.0f} MB | 1.00 |")
    print(
        f"| `[notebook]`: {len(notebook)} distributions | {nb_b / MB:.0f} MB | "
        f"{nb_b / lean_b:.2f} |"
    )
    print(
        f"| `[server]`: {len(server)} distributions | {server_b / MB:.0f} MB | "
        f"{server_b / lean_b:.2f} |"
    )
    print(f"\nthe server's on top of the lean: {', '.join(sorted(server - lean))}")


if __name__ == "__main__":
    main()
