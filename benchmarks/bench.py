"""Speed and memory of tmemlint against ptxas on the same files (issue: performance at production scale).

    python benchmarks/bench.py [--runs 3] [--quick] [--out report.md]

For every input it runs ``ptxas -arch=<the file's .target> FILE -o /dev/null`` and ``python -m tmemlint --format
json FILE`` ``--runs`` times each, alternating, and records wall time and peak resident memory (see ``measure``: worker
processes are counted); the table shows medians and the ratios tmemlint / ptxas.  Inputs: the Triton corpus of
``../shared`` (sm_100a / sm_103a / sm_120a files), the largest nvcc fixture, the CuTe DSL files, the full-size nvcc
kernels of ``fixtures/real/nvcc`` (with and without ``-lineinfo``; one has 7 kernels in 25,769 lines), and a template-heavy
CUDA file (``benchmarks/kernels/template_gemms.cu``) compiled here with ``nvcc -arch=sm_100a -ptx -lineinfo`` into a
temporary folder (about 520k lines, 136 kernels; ``--quick`` skips it).  A last row compares ``--jobs 1`` with
``--jobs 2`` over the whole Triton corpus.  Nothing here is a test: the machine is noisy, so the figures are medians.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def _tree_rss_kb(pid: int) -> int:
    """Resident memory (kB) of ``pid`` and all its descendants now, from ``/proc`` (0 when it has ended)."""
    total = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    todo.extend(int(c) for c in fh.read().split())
        except (OSError, ValueError):
            continue
    return total


def measure(cmd: list[str], cwd: Path | None = None) -> tuple[float, float, int]:
    """Run ``cmd``; returns (wall seconds, peak resident memory in MB, exit code).  Output is discarded.

    Memory is the larger of ``wait4``'s ``ru_maxrss`` (the largest single process) and the peak of the summed
    resident memory of the process and its workers, sampled from ``/proc`` every 20 ms: a run that splits one
    file over worker processes is charged for all of them."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)
    peak = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.wait(0.02):
            peak = max(peak, _tree_rss_kb(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    stop.set()
    sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, max(usage.ru_maxrss, peak) / 1024.0, proc.returncode


def target_of(path: Path) -> str:
    m = re.search(r"^\s*\.target\s+(sm_\w+)", path.read_text(errors="replace"), re.M)
    return m.group(1) if m else "sm_100a"


def inputs(quick: bool, tmp: Path) -> list[tuple[str, Path]]:
    out: list[tuple[str, Path]] = []
    tri = sorted((SHARED / "corpus" / "triton").glob("*.ptx"))
    out += [("triton", p) for p in tri]
    out += [("cute-dsl", p) for p in sorted((ROOT / "fixtures" / "real" / "cute").glob("*.ptx"))]
    nv = sorted((ROOT / "fixtures" / "nvcc").glob("*.ptx"), key=lambda p: p.stat().st_size)
    if nv:
        out.append(("nvcc", nv[-1]))
    out += [("nvcc real", p) for p in sorted((ROOT / "fixtures" / "real" / "nvcc").glob("*.ptx"))]
    if not quick and shutil.which("nvcc"):
        src = ROOT / "benchmarks" / "kernels" / "template_gemms.cu"
        ptx = tmp / "template_gemms.ptx"
        print(f"compiling {src.name} with nvcc ...", file=sys.stderr)
        subprocess.run(["nvcc", "-arch=sm_100a", "-ptx", "-lineinfo", src.name, "-o", str(ptx)],
                       cwd=src.parent, check=True)
        out.append(("nvcc templates", ptx))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="skip the 520k-line template file")
    ap.add_argument("--out", type=Path, help="also write the Markdown table here")
    args = ap.parse_args()
    if not shutil.which("ptxas"):
        print("ptxas not found: install the CUDA toolkit", file=sys.stderr)
        return 2
    lint = [sys.executable, "-m", "tmemlint", "--no-cache", "--format", "json"]
    rows = []
    with tempfile.TemporaryDirectory() as td:
        for kind, path in inputs(args.quick, Path(td)):
            lines = path.read_text(errors="replace").count("\n")
            arch = target_of(path)
            p_t, p_m, l_t, l_m = [], [], [], []
            for _ in range(args.runs):
                t, m, _rc = measure(["ptxas", f"-arch={arch}", str(path), "-o", os.devnull])
                p_t.append(t)
                p_m.append(m)
                t, m, _rc = measure(lint + [str(path)], cwd=ROOT)
                l_t.append(t)
                l_m.append(m)
            row = (kind, path.name, lines, statistics.median(p_t), max(p_m), statistics.median(l_t), max(l_m))
            rows.append(row)
            print(f"{row[1]:<36} {lines:>8} ptxas {row[3]:7.2f}s {row[4]:7.0f}MB  tmemlint {row[5]:7.2f}s "
                  f"{row[6]:7.0f}MB  time x{row[5] / row[3]:.2f} mem x{row[6] / row[4]:.2f}", file=sys.stderr)
        tri = [str(p) for p in sorted((SHARED / "corpus" / "triton").glob("*.ptx"))]
        jobs = {}
        probe_jobs = subprocess.run([sys.executable, "-m", "tmemlint", "check", "--help"], capture_output=True,
                                    text=True, cwd=ROOT).stdout
        if "--jobs" in probe_jobs and tri:
            for n in (1, 2):
                jobs[n] = statistics.median(measure(lint + ["--jobs", str(n)] + tri, cwd=ROOT)[0]
                                            for _ in range(args.runs))
    table = ["| input | file | lines | ptxas s | ptxas MB | tmemlint s | tmemlint MB | time ratio | memory ratio |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for kind, name, lines, pt, pm, lt, lm in rows:
        table.append(f"| {kind} | {name} | {lines} | {pt:.2f} | {pm:.0f} | {lt:.2f} | {lm:.0f} | "
                     f"{lt / pt:.2f} | {lm / pm:.2f} |")
    ratios = [r[5] / r[3] for r in rows]
    mem = [r[6] / r[4] for r in rows]
    total_lines = sum(r[2] for r in rows)
    total_time = sum(r[5] for r in rows)
    summary = [
        "",
        f"files: {len(rows)}; time ratio median {statistics.median(ratios):.2f}, max {max(ratios):.2f}; "
        f"memory ratio median {statistics.median(mem):.2f}, max {max(mem):.2f}; "
        f"tmemlint {total_lines / total_time:,.0f} lines/s over all files (process start included)",
    ]
    if jobs:
        summary.append(f"Triton corpus, {len(tri)} files: --jobs 1 {jobs[1]:.2f}s, --jobs 2 {jobs[2]:.2f}s, "
                       f"speed-up x{jobs[1] / jobs[2]:.2f}")
    text = "\n".join(table + summary) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
