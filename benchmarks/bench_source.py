"""Speed of source mode (CUDA files linted without a compiler): lines per second over a tree of .cu/.cuh files.

    python benchmarks/bench_source.py                 # fixtures/, examples/ and ../shared/cases
    python benchmarks/bench_source.py DIR_OR_FILE ... # any tree
    python benchmarks/bench_source.py --repeat 5 --cli

Prints, for the best of ``--repeat`` runs in this process: files, lines, seconds, lines/s, the share of each phase
(preprocessing, tree-sitter parse and definitions, lowering to the IR, analyses and rules) and the slowest files.
``--cli`` also times ``python -m tmemlint FILES`` end to end (interpreter start-up included: what a pre-commit
hook feels).  Not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tmemlint.checks.registry import load_all  # noqa: E402
from tmemlint.engine import Options, lint_module, lint_source  # noqa: E402
from tmemlint.frontend.cpp_pre import preprocess  # noqa: E402
from tmemlint.frontend.cuda import parse_cuda  # noqa: E402
from tmemlint.frontend.cuda_program import Program  # noqa: E402


def collect(paths: list[str]) -> list[Path]:
    """The .cu/.cuh files under ``paths`` (sorted)."""
    out: list[Path] = []
    for p in paths:
        q = Path(p)
        if q.is_dir():
            out.extend(sorted(x for x in q.rglob("*") if x.suffix in (".cu", ".cuh") and x.is_file()))
        elif q.is_file():
            out.append(q)
    return out


def one_pass(files: list[tuple[Path, str]]) -> tuple[float, dict[str, float], list[tuple[float, str]]]:
    """Seconds for linting every file once, per-phase seconds, and per-file seconds."""
    phases = {"preprocess": 0.0, "parse": 0.0, "lower": 0.0, "rules": 0.0}
    per_file = []
    opts = Options()
    t_all = time.perf_counter()
    for path, text in files:
        t0 = time.perf_counter()
        lint_source(text, str(path), opts)  # the real entry point (what the CLI runs)
        per_file.append((time.perf_counter() - t0, str(path)))
    total = time.perf_counter() - t_all
    # phase split, measured separately on the same inputs
    for path, text in files:
        if "tcgen05" not in text:
            continue
        t0 = time.perf_counter()
        pre = preprocess(text)
        t1 = time.perf_counter()
        Program(pre, str(path))
        t2 = time.perf_counter()
        unit = parse_cuda(text, str(path))
        t3 = time.perf_counter()
        lint_module(unit.module, str(path), opts)
        t4 = time.perf_counter()
        phases["preprocess"] += t1 - t0
        phases["parse"] += t2 - t1
        phases["lower"] += max(0.0, (t3 - t2) - (t2 - t0))  # parse_cuda repeats preprocess + parse
        phases["rules"] += t4 - t3
    return total, phases, per_file


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cli", action="store_true", help="also time `python -m tmemlint FILES` end to end")
    args = ap.parse_args(argv)
    paths = args.paths or [str(ROOT / "fixtures"), str(ROOT / "examples"), str(ROOT.parent / "shared" / "cases")]
    files = [(p, p.read_text(encoding="utf-8", errors="replace")) for p in collect(paths)]
    if not files:
        print("no .cu/.cuh files found")
        return
    lines = sum(t.count("\n") for _, t in files)
    load_all()
    one_pass(files[:1])  # warm-up: grammar, tree-sitter language, rule registry
    best = None
    for _ in range(max(1, args.repeat)):
        got = one_pass(files)
        if best is None or got[0] < best[0]:
            best = got
    total, phases, per_file = best
    split = sum(phases.values()) or 1.0
    print(f"source mode: {len(files)} files, {lines} lines, {total:.3f} s (best of {args.repeat}): "
          f"{lines / total:,.0f} lines/s, {1000 * total / len(files):.1f} ms/file")
    print("  phases: " + ", ".join(f"{k} {100 * v / split:.0f}%" for k, v in phases.items()))
    for secs, name in sorted(per_file, reverse=True)[:5]:
        print(f"  slowest: {1000 * secs:7.1f} ms  {os.path.relpath(name)}")
    if args.cli:
        cmd = [sys.executable, "-m", "tmemlint", "--format", "concise", "--jobs", "1", *[str(p) for p, _ in files]]
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, capture_output=True, check=False)
        dt = time.perf_counter() - t0
        print(f"cli end to end (one process, start-up included): {dt:.2f} s, {lines / dt:,.0f} lines/s")


if __name__ == "__main__":
    main()
