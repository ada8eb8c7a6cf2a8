"""Speed and memory of tmemlint against ptxas on the same files (issue 18: production builds).

    python benchmarks/bench.py [--runs 1] [--corpus DIR] [--no-triton] [--extra] [--skip-build] [--out report.md]
                               [--triton DIR] [--jobs N] [--shard K/N] [--csv rows.csv]
    python benchmarks/bench.py --phases [--corpus DIR] [--no-triton] [--extra] [--examples] [--csv rows.csv]
                               [--out summary.md]

Inputs: the third-party corpus ``.corpus/ptx/<project>/*.ptx`` (CUTLASS, ThunderKittens, DeepGEMM, FlashMLA,
FlashAttention-4, QuACK, CuTe DSL builds: local, never committed; ``--corpus`` names another folder of
``<project>/*.ptx``) and the Triton corpus of ``../shared/corpus/triton``; either may be missing (the benchmark runs
on what there is).  ``--extra`` adds the real-size nvcc and CuTe DSL fixtures of ``fixtures/real``.

Per file, ``--runs`` times each, alternating: ``ptxas -arch=<the file's .target> FILE -o /dev/null`` and
``tmemlint --no-cache --format json FILE`` (the console script, default ``--jobs``: all cores).  Wall time in
seconds, CPU seconds (user + system, workers included: far less sensitive than wall time to other work on the
machine) and peak memory in MB (``measure``: the larger of ``ru_maxrss`` and the peak of the memory summed over the
process and its workers, as proportional set sizes, sampled every 20 ms), medians over the runs; ratios are
tmemlint / ptxas.  Then, over all files of the production corpus: one ``tmemlint --jobs 2`` run against the sum
of the per-file ptxas times; the start-up: ``tmemlint --version`` and ``tmemlint rules`` against ``python -c pass``
(minimum of 20 runs each); and the start-up floor (``floor``): the CPU time and memory of a check of an empty
module, which every file pays before its first line, set against each file's ptxas figures ("floor ratio": no
ratio can be below it).  tmemlint's bytecode is compiled first (``compile_bytecode``), as an installed package's
is.  The machine's load average (``os.getloadavg``, 1 minute) is sampled before every measurement and reported.
The report names files by project and file name only.  Nothing here is a test.

``--phases`` (issue 29's per-phase account): per file, ptxas's CPU time and one ``tmemlint --no-cache --jobs 1
--profile-json`` run (``tmemlint.profile``: exclusive CPU seconds per phase, measured in the process), with the
process's own CPU time from ``wait4`` beside the profile's total; ``--csv`` writes one row per file (every phase
of ``profile.PHASES``, the rules' sum and the costliest rule, the counts), and the summary (``phase_summary``:
per project each phase group's CPU seconds and share, the heaviest files, and what keeps each file from the
targets) goes to standard output and ``--out``.  ``--examples`` adds ``examples/*.ptx``.

On a machine with many cores, ``--shard K/N`` runs shard K (0-based) of N (``shards``: the files dealt by size, so
the shards take about the same time) and ``--jobs 1`` checks each file in one process: N such runs side by side, each
file's ptxas just before its tmemlint in the same shard, so both see the same load; ``--csv`` writes the rows, which
a reader of several shards joins.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CORPUS = ROOT / ".corpus" / "ptx"


def _resident_kb(p: int) -> int:
    """The proportional resident memory (kB) of process ``p``: ``Pss`` of ``/proc/<p>/smaps_rollup`` (a page shared
    by n processes counts 1/n in each, so the forked workers of a split run are not charged again for the pages
    they share with their parent), else ``VmRSS``.  Raises OSError when ``p`` has ended."""
    try:
        with open(f"/proc/{p}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except FileNotFoundError:
        pass
    with open(f"/proc/{p}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _tree_rss_kb(pid: int) -> int:
    """Resident memory (kB) of the descendants of ``pid`` now (not of ``pid`` itself), from ``/proc`` (0 when
    they have ended): ``VmRSS`` for one process (cheap; its ``ru_maxrss`` is the figure anyway), the sum of
    ``_resident_kb`` (proportional) for several (reading ``smaps_rollup`` takes milliseconds on a large process)."""
    found: list[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    kids = [int(c) for c in fh.read().split()]
                found += kids
                todo += kids
        except (OSError, ValueError):
            continue
    total = 0
    for p in found:
        try:
            if len(found) > 1:
                total += _resident_kb(p)
            else:
                with open(f"/proc/{p}/status") as fh:
                    total += next((int(line.split()[1]) for line in fh if line.startswith("VmRSS:")), 0)
        except (OSError, ValueError):
            continue
    return total


LOADS: list[float] = []


#: CPU seconds (user + system) of each ``measure``d command, its workers included, in the order measured.
CPU: list[float] = []

#: Runs the command given as its arguments (output discarded) and prints its wall seconds, ``wait4`` exit status,
#: ``ru_maxrss`` (kB) and user + system seconds.  A process's ``ru_maxrss`` includes the resident memory of the
#: process it was forked from (Linux folds the pre-``exec`` address space's high-water mark into it), so the
#: command is forked from this small interpreter (``-S``: about 8 MB), not from the benchmark, whose own memory
#: (tens of MB by the end of a run) would otherwise be every small command's peak.
_LAUNCHER = """
import os, sys, time
t = time.perf_counter()
pid = os.fork()
if pid == 0:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    try:
        os.execvp(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
print(time.perf_counter() - t, status, ru.ru_maxrss, ru.ru_utime + ru.ru_stime)
"""


def measure(cmd: list[str], cwd: Path | None = None) -> tuple[float, float, int]:
    """Run ``cmd``; returns (wall seconds, peak resident memory in MB, exit code).  Output is discarded; the CPU
    time (user + system, of the process and of the workers it waited for: ``wait4``) is appended to ``CPU``.

    Memory is the larger of ``ru_maxrss`` (the largest single process) and the peak of the summed proportional
    resident memory of the process and its workers (``_resident_kb``), sampled from ``/proc`` every 20 ms: a run
    that splits one file over worker processes is charged for all of them, once for the pages they share.  The
    command runs under ``_LAUNCHER``, which measures it."""
    LOADS.append(os.getloadavg()[0])
    proc = subprocess.Popen([sys.executable, "-S", "-c", _LAUNCHER, *cmd], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, cwd=cwd, text=True)
    peak = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.wait(0.02):
            peak = max(peak, _tree_rss_kb(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = proc.communicate()
    stop.set()
    sampler.join()
    wall, status, maxrss, cpu = out.split()
    CPU.append(float(cpu))
    return float(wall), max(int(maxrss), peak) / 1024.0, os.waitstatus_to_exitcode(int(status))


def target_of(path: Path) -> str:
    with open(path, errors="replace") as fh:
        m = re.search(r"^\s*\.target\s+(sm_\w+)", fh.read(1 << 16), re.M)
    return m.group(1) if m else "sm_100a"


def inputs(args) -> list[tuple[str, str, Path]]:
    """``(group, project, path)``: group ``production`` (the third-party corpus), ``triton`` or ``extra``."""
    out = []
    corpus = Path(args.corpus) if args.corpus else CORPUS
    if corpus.is_dir():
        for d in sorted(p for p in corpus.iterdir() if p.is_dir()):
            out += [("production", d.name, p) for p in sorted(d.glob("*.ptx"))]
    if not args.no_triton:
        triton = Path(args.triton) if args.triton else SHARED / "corpus" / "triton"
        out += [("triton", "triton", p) for p in sorted(triton.glob("*.ptx"))]
    if args.extra:
        out += [("extra", p.parent.name, p) for p in sorted((ROOT / "fixtures" / "real").rglob("*.ptx"))]
    if getattr(args, "examples", False):
        out += [("examples", "examples", p) for p in sorted((ROOT / "examples").glob("*.ptx"))]
    return out


#: The phase groups of the ``--phases`` summary: name -> the ``tmemlint.profile`` phases in it (``rules``: every
#: ``rule:TMxxx``).
PHASE_GROUPS: dict[str, tuple[str, ...]] = {
    "startup": ("startup",),
    "read+prepass": ("read", "prepass"),
    "parser load": ("parser_load",),
    "parse": ("parse",),
    "cuda/compile": ("cuda", "compile"),
    "cfg+values+threads": ("triage", "inline", "cfg", "values", "threads", "sites", "address_sets", "executing",
                           "lifecycle"),
    "sync model": ("sync",),
    "simulations": ("simulation",),
    "solver": ("solver",),
    "z3 import": ("solver_import",),
    "rules": ("rules",),
    "witness": ("witness",),
    "lineinfo+suppress+output": ("lineinfo", "suppress", "output"),
    "driver": ("driver",),
    "exit": ("exit",),
}


def profile_row(doc: dict) -> dict:
    """The CSV columns of one ``--profile-json`` document: each phase of ``profile.PHASES`` (CPU seconds), the sum
    of the ``rule:`` phases, the costliest rule and its seconds, and the counts."""
    from tmemlint.profile import COUNTS, PHASES

    ph = doc["total"]["phases"]
    rules = {k[5:]: v for k, v in ph.items() if k.startswith("rule:")}
    top = max(rules, key=rules.get) if rules else ""
    row = {k: ph.get(k, 0.0) for k in PHASES}
    row["sync"] += sum(v for k, v in ph.items() if k.startswith("sync:"))  # the model's queries, by method
    row["rules"] = sum(rules.values())
    row["top_rule"] = top
    row["top_rule_s"] = rules.get(top, 0.0)
    by = doc["total"].get("simulation_by", {})
    n_by = doc["total"].get("simulations_by", {})
    row["simulations_asked_by"] = "; ".join(f"{k} {v:.2f} s ({n_by.get(k, 0)})" for k, v in list(by.items())[:3])
    row["profile_cpu"] = doc["total"]["cpu_s"]
    row["exit"] = 0.0  # set by the caller: the process's CPU time (wait4) after the profile was taken
    row.update({k: doc["total"]["counts"].get(k, 0) for k in COUNTS})
    return row


def grouped(row: dict) -> dict[str, float]:
    """``row``'s CPU seconds per ``PHASE_GROUPS`` group."""
    return {g: sum(row[p] for p in ps) for g, ps in PHASE_GROUPS.items()}


def phase_summary(rows: list[dict]) -> str:
    """The ``--phases`` report: per project, each phase group's CPU seconds (summed over its files) and share of
    the profile's total; the ten heaviest files with their three largest groups; and per target (median and
    every file ≤ x0.25 / x1.5 of ptxas's CPU time) what stands in the way: the files whose start-up alone is over
    the budget, and for the others the group that is largest."""
    out = []
    groups = list(PHASE_GROUPS)
    out.append("| project | files | ptxas CPU s | tmemlint CPU s (wait4) | profile s | " + " | ".join(groups) + " |")
    out.append("|---|---:|---:|---:|---:|" + "---:|" * len(groups))
    projects = sorted({(r["group"], r["project"]) for r in rows})
    for g, proj in projects + [("", "(all)")]:
        rs = [r for r in rows if (r["group"], r["project"]) == (g, proj) or proj == "(all)"]
        tot = sum(r["lint_cpu"] for r in rs)
        sums = {k: sum(grouped(r)[k] for r in rs) for k in groups}
        out.append(f"| {proj} | {len(rs)} | {sum(r['ptxas_cpu'] for r in rs):.2f} | "
                   f"{tot:.2f} | {sum(r['profile_cpu'] for r in rs):.2f} | " +
                   " | ".join(f"{sums[k]:.2f} ({100 * sums[k] / tot if tot else 0:.0f}%)" for k in groups) + " |")
    out.append("")
    out.append("Heaviest files (CPU seconds; ratio to ptxas's CPU time; the three largest phase groups; counts):")
    out.append("")
    out.append("| file | lines | ptxas CPU s | tmemlint CPU s | ratio | largest groups | top rule | functions | "
               "instructions | simulations | hb queries | solver queries |")
    out.append("|---|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|")
    for r in sorted(rows, key=lambda r: -r["lint_cpu"])[:12]:
        gs = sorted(grouped(r).items(), key=lambda kv: -kv[1])[:3]
        out.append(f"| {r['project']}/{r['name']} | {r['lines']} | {r['ptxas_cpu']:.2f} | {r['lint_cpu']:.2f} | "
                   f"x{r['lint_cpu'] / r['ptxas_cpu']:.2f} | " +
                   ", ".join(f"{k} {v:.2f} ({100 * v / r['lint_cpu']:.0f}%)" for k, v in gs) +
                   f" | {r['top_rule']} {r['top_rule_s']:.2f} | {r['functions']} | {r['instructions']} | "
                   f"{r['simulations']} | {r['hb_queries']} | {r['solver_queries']} |")
    out.append("")
    ok = [r for r in rows if r["ptxas_cpu"] > 0]
    if ok:
        ratios = sorted(r["lint_cpu"] / r["ptxas_cpu"] for r in ok)
        out.append(f"CPU-time ratio over {len(ok)} files: median x{statistics.median(ratios):.2f}, max x{ratios[-1]:.2f}; "
                   f"{sum(x <= 0.25 for x in ratios)} at most x0.25, {sum(x <= 1.5 for x in ratios)} at most x1.5.")
        for limit in (0.25, 1.5):
            over = [r for r in ok if r["lint_cpu"] > limit * r["ptxas_cpu"]]
            floor_over = [r for r in over if r["startup"] > limit * r["ptxas_cpu"]]
            largest: dict[str, int] = {}
            for r in over:
                if r in floor_over:
                    continue
                gs = grouped(r)
                gs.pop("startup")
                k = max(gs, key=gs.get)
                largest[k] = largest.get(k, 0) + 1
            out.append(f"Over x{limit:g}: {len(over)} files; start-up alone over the budget on {len(floor_over)}; "
                       f"on the others the largest group is " +
                       (", ".join(f"{k} ({n})" for k, n in sorted(largest.items(), key=lambda kv: -kv[1])) or "-")
                       + ".")
    return "\n".join(out) + "\n"


def startup_split(n: int = 10) -> dict[str, float]:
    """What the ``startup`` phase is made of, as the minimum CPU seconds of ``n`` runs each: the interpreter
    (``python -c pass``), the interpreter and the modules of a plain check (``checkcmd`` and ``load_all``: the rules
    and the analyses), the whole check of an empty module, and its ``startup`` phase (``--profile-json``: the
    configuration and the file search too)."""
    import json
    import tempfile

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        empty = os.path.join(tmp, "empty.ptx")
        prof = os.path.join(tmp, "p.json")
        with open(empty, "w") as fh:
            fh.write(_EMPTY_PTX)
        cmds = {"python -c pass": [sys.executable, "-c", "pass"],
                "python + imports of a check": [sys.executable, "-c", "from tmemlint.checkcmd import load_all; "
                                                                       "load_all()"],
                "check of an empty module": tmemlint_cmd() + ["--no-cache", "--format", "json", empty]}
        for k, c in cmds.items():
            runs = []
            for _ in range(n):
                measure(c, cwd=ROOT)
                runs.append(CPU[-1])
            out[k] = min(runs)
        starts = []
        for _ in range(n):
            measure(tmemlint_cmd() + ["--no-cache", "--format", "json", "--profile-json", prof, empty], cwd=ROOT)
            with open(prof, encoding="utf-8") as fh:
                starts.append(json.load(fh)["total"]["phases"]["startup"])
        out["its startup phase (--profile-json)"] = min(starts)
    return out


def run_phases(args) -> int:
    """``--phases``: ptxas and one profiled tmemlint run per file (``phase_summary``)."""
    import json
    import tempfile

    compile_bytecode()
    load_before = os.getloadavg()
    rows = []
    lint = tmemlint_cmd() + ["--no-cache", "--jobs", "1", "--format", "json", "--exit-zero"]
    with tempfile.TemporaryDirectory() as tmp:
        prof = os.path.join(tmp, "profile.json")
        for group, project, path in inputs(args):
            with open(path, "rb") as fh:
                lines = fh.read().count(b"\n")
            _t, p_mb, p_rc = measure(["ptxas", f"-arch={target_of(path)}", str(path), "-o", os.devnull])
            p_cpu = CPU[-1]
            _t, l_mb, l_rc = measure(lint + ["--profile-json", prof, str(path)], cwd=ROOT)
            if l_rc != 0:
                print(f"{project}/{path.name}: tmemlint exited with {l_rc}", file=sys.stderr)
                continue
            with open(prof, encoding="utf-8") as fh:
                doc = json.load(fh)
            row = {"group": group, "project": project, "name": path.name, "lines": lines, "ptxas_cpu": p_cpu,
                   "ptxas_mb": p_mb, "ptxas_rc": p_rc, "lint_cpu": CPU[-1], "lint_mb": l_mb, "load": LOADS[-1]}
            row.update(profile_row(doc))
            row["exit"] = max(0.0, row["lint_cpu"] - row["profile_cpu"])  # writing the JSON, interpreter shutdown
            rows.append(row)
            gs = sorted(grouped(row).items(), key=lambda kv: -kv[1])[:3]
            print(f"{project}/{path.name:<48} {lines:>8} ptxas {p_cpu:6.2f}s tmemlint {row['lint_cpu']:6.2f}s "
                  f"(profile {row['profile_cpu']:6.2f}s) x{row['lint_cpu'] / max(p_cpu, 1e-9):.2f} " +
                  ", ".join(f"{k} {v:.2f}" for k, v in gs) + f" (load {LOADS[-1]:.1f})", file=sys.stderr, flush=True)
    low = startup_split()
    load_after = os.getloadavg()
    text = phase_summary(rows) if rows else "no files\n"
    text += "\nstart-up split (CPU seconds, minimum of 10 runs): " + ", ".join(f"{k} {v * 1000:.0f} ms"
                                                                          for k, v in low.items()) + "\n"
    text += (f"\nload average (1 min) before {load_before[0]:.2f}, after {load_after[0]:.2f}; sampled before each "
             f"measurement: median {statistics.median(LOADS) if LOADS else 0:.2f}, max {max(LOADS, default=0):.2f}; "
             f"{os.cpu_count()} cores\n")
    return _write_outputs(args, rows, text)



def _write_outputs(args: argparse.Namespace, rows: list[dict], text: str) -> int:
    """Print ``text``; write ``rows`` to ``--csv`` and ``text`` to ``--out`` where given.  The exit status (0)."""
    print(text)
    if args.csv:
        import csv

        with open(args.csv, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else ["group"])
            w.writeheader()
            w.writerows(rows)
    if args.out:
        args.out.write_text(text)
    return 0

def shards(sizes: list[int], n: int) -> list[int]:
    """The shard (0 to ``n`` - 1) of each of the files of ``sizes`` (bytes): the largest first, each to the shard
    with the fewest bytes so far (the lowest index on a tie), so that ``n`` shards run side by side end at about the
    same time (ptxas's and tmemlint's times grow with a file's size).  Deterministic: every shard computes the same
    assignment from the same inputs."""
    if n < 1:
        raise ValueError(f"shards: {n} shards")
    load = [0] * n
    out = [0] * len(sizes)
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        k = min(range(n), key=lambda k: (load[k], k))
        out[i] = k
        load[k] += sizes[i]
    return out


def tmemlint_cmd() -> list[str]:
    script = Path(sys.executable).with_name("tmemlint")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "tmemlint"]


def compile_bytecode() -> None:
    """Compile tmemlint's bytecode, as pip does when it installs the package: an editable install run with
    ``PYTHONDONTWRITEBYTECODE=1`` would otherwise compile every module it imports in every run (``rules``: the
    rule table, 1.6 ms of a 14 ms start; a CUDA check: 0.05 s)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "tmemlint")], capture_output=True,
                   check=False)


def startup(n: int = 20) -> dict[str, float]:
    """Minimum wall time (s) of ``python -c pass``, ``tmemlint --version`` and ``tmemlint rules``."""
    compile_bytecode()
    cmds = {"python -c pass": [sys.executable, "-c", "pass"], "tmemlint --version": tmemlint_cmd() + ["--version"],
            "tmemlint rules": tmemlint_cmd() + ["rules"]}
    best = {k: float("inf") for k in cmds}
    for _ in range(n):
        for k, c in cmds.items():
            LOADS.append(os.getloadavg()[0])
            t = time.perf_counter()
            subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            best[k] = min(best[k], time.perf_counter() - t)
    return best


#: An empty PTX module: checking it costs what every check costs before its first line (``floor``).
_EMPTY_PTX = ".version 8.7\n.target sm_100a\n.address_size 64\n"


def floor(n: int = 10) -> dict[str, tuple[float, float]]:
    """The start-up floor, as (minimum CPU seconds, peak MB) of ``n`` runs each: ``python -c pass``; importing the
    stack the product card fixes (lark, lark-cython, typer), with no tmemlint code; and ``tmemlint --no-cache
    --format json`` on an empty PTX module (imports, the LALR tables, the rules, the configuration, output).
    Every per-file ratio is at least the last divided by ptxas's figure."""
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as fh:
        fh.write(_EMPTY_PTX)
    cmds = {"python -c pass": [sys.executable, "-c", "pass"],
            "import lark, lark_cython, typer": [sys.executable, "-c", "import lark, lark_cython, typer"],
            "check of an empty module": tmemlint_cmd() + ["--no-cache", "--format", "json", fh.name]}
    out = {}
    try:
        for k, c in cmds.items():
            runs = []
            for _ in range(n):
                _w, mb, rc = measure(c)
                if rc not in (0, 1):  # 1: a check with findings; an empty module has none
                    raise RuntimeError(f"start-up floor: {' '.join(c)} exited with {rc}")
                runs.append((CPU[-1], mb))
            out[k] = (min(t for t, _ in runs), min(m for _, m in runs))
    finally:
        os.unlink(fh.name)
    return out


def summary(rows, group: str, floor_cpu: float, floor_mb: float) -> str:
    """One line of figures for the files of ``group``; ``floor_cpu``/``floor_mb``: the check of an empty module."""
    rs = [r for r in rows if r["group"] == group and r["ptxas_rc"] == 0]
    if not rs:
        return ""
    t = [r["lint_s"] / r["ptxas_s"] for r in rs]
    c = [r["lint_cpu"] / r["ptxas_cpu"] for r in rs]
    m = [r["lint_mb"] / r["ptxas_mb"] for r in rs]
    worst = max(rs, key=lambda r: r["lint_s"] / r["ptxas_s"])

    def above(x: float) -> int:
        return sum(floor_cpu > x * r["ptxas_cpu"] for r in rs)

    return (f"{group}: {len(rs)} files; time ratio median {statistics.median(t):.2f}, max {max(t):.2f} "
            f"({worst['project']}/{worst['name']}); CPU-time ratio median {statistics.median(c):.2f}, max "
            f"{max(c):.2f}; memory ratio median {statistics.median(m):.2f}, max {max(m):.2f}; "
            f"{sum(x <= 0.25 for x in t)} files at most x0.25 in time, {sum(x <= 0.5 for x in m)} at most x0.5 in "
            f"memory; ptxas {sum(r['ptxas_s'] for r in rs):.1f} s in all ({sum(r['ptxas_cpu'] for r in rs):.1f} s "
            f"CPU), tmemlint {sum(r['lint_s'] for r in rs):.1f} s ({sum(r['lint_cpu'] for r in rs):.1f} s CPU); the "
            f"start-up floor alone is above x0.25 of ptxas's CPU time on {above(0.25)} files, above x1.5 on "
            f"{above(1.5)}, and above x0.5 of its memory on {sum(floor_mb > 0.5 * r['ptxas_mb'] for r in rs)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--corpus", help="folder of <project>/*.ptx (default: .corpus/ptx)")
    ap.add_argument("--no-triton", action="store_true", help="leave out ../shared/corpus/triton")
    ap.add_argument("--triton", help="folder of the Triton *.ptx (default: ../shared/corpus/triton)")
    ap.add_argument("--extra", action="store_true", help="add the nvcc and CuTe DSL files of fixtures/real")
    ap.add_argument("--skip-build", action="store_true", help="no whole-corpus --jobs 2 run")
    ap.add_argument("--out", type=Path, help="also write the Markdown report here")
    ap.add_argument("--jobs", type=int, help="tmemlint --jobs for each file (default: tmemlint's own, all cores)")
    ap.add_argument("--shard", help="K/N: only shard K (0-based) of N, the files dealt by size (shards)")
    ap.add_argument("--csv", type=Path, help="also write the per-file rows here")
    ap.add_argument("--phases", action="store_true", help="the CPU time per phase of each file (--profile-json)")
    ap.add_argument("--examples", action="store_true", help="add examples/*.ptx")
    args = ap.parse_args()
    if not shutil.which("ptxas"):
        print("ptxas not found: install the CUDA toolkit", file=sys.stderr)
        return 2
    if args.phases:
        return run_phases(args)
    lint = tmemlint_cmd() + ["--no-cache", "--format", "json"] + (["--jobs", str(args.jobs)] if args.jobs else [])
    files = inputs(args)
    if args.shard:
        k, n = (int(x) for x in args.shard.split("/"))
        dealt = shards([path.stat().st_size for _g, _p, path in files], n)
        files = [f for f, s in zip(files, dealt) if s == k]
    compile_bytecode()
    load_before = os.getloadavg()
    rows = []
    for group, project, path in files:
        with open(path, "rb") as fh:
            lines = fh.read().count(b"\n")
        arch = target_of(path)
        p_t, p_m, p_c, l_t, l_m, l_c, p_rc = [], [], [], [], [], [], 0
        for _ in range(args.runs):
            t, m, rc = measure(["ptxas", f"-arch={arch}", str(path), "-o", os.devnull])
            p_t.append(t)
            p_m.append(m)
            p_c.append(CPU[-1])
            p_rc = p_rc or rc
            t, m, _rc = measure(lint + [str(path)], cwd=ROOT)
            l_t.append(t)
            l_m.append(m)
            l_c.append(CPU[-1])
        row = {"group": group, "project": project, "name": path.name, "lines": lines, "ptxas_s": statistics.median(p_t),
               "ptxas_mb": max(p_m), "ptxas_cpu": statistics.median(p_c), "ptxas_rc": p_rc,
               "lint_s": statistics.median(l_t), "lint_mb": max(l_m), "lint_cpu": statistics.median(l_c),
               "load": LOADS[-1]}
        rows.append(row)
        print(f"{project}/{path.name:<48} {lines:>8} ptxas {row['ptxas_s']:7.2f}s {row['ptxas_mb']:6.0f}MB  tmemlint "
              f"{row['lint_s']:7.2f}s {row['lint_mb']:6.0f}MB  time x{row['lint_s'] / row['ptxas_s']:.2f} mem "
              f"x{row['lint_mb'] / row['ptxas_mb']:.2f} CPU ptxas {row['ptxas_cpu']:.2f}s tmemlint {row['lint_cpu']:.2f}s "
              f"(load {LOADS[-1]:.1f})", file=sys.stderr, flush=True)
    build = None
    prod = [r for r in rows if r["group"] == "production"]
    if prod and not args.skip_build:
        corpus = Path(args.corpus) if args.corpus else CORPUS
        files = [str(corpus / r["project"] / r["name"]) for r in prod]
        wall, mb, _rc = measure(tmemlint_cmd() + ["--no-cache", "--format", "json", "--jobs", "2"] + files, cwd=ROOT)
        build = (len(files), wall, mb, sum(r["ptxas_s"] for r in prod))
        print(f"whole corpus --jobs 2: {wall:.1f} s, {mb:.0f} MB; ptxas sum {build[3]:.1f} s", file=sys.stderr)
    start = startup()
    low = floor()
    load_after = os.getloadavg()
    empty_cpu, empty_mb = low["check of an empty module"]

    table = ["| project | file | lines | ptxas s | ptxas CPU s | ptxas MB | tmemlint s | tmemlint CPU s | tmemlint MB "
             "| time ratio | CPU ratio | memory ratio | floor CPU ratio | floor memory ratio |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        note = "" if r["ptxas_rc"] == 0 else " (ptxas failed)"
        table.append(f"| {r['project']} | {r['name']}{note} | {r['lines']} | {r['ptxas_s']:.2f} | "
                     f"{r['ptxas_cpu']:.2f} | {r['ptxas_mb']:.0f} | {r['lint_s']:.2f} | {r['lint_cpu']:.2f} | "
                     f"{r['lint_mb']:.0f} | "
                     f"{r['lint_s'] / r['ptxas_s']:.2f} | {r['lint_cpu'] / r['ptxas_cpu']:.2f} | "
                     f"{r['lint_mb'] / r['ptxas_mb']:.2f} | {empty_cpu / r['ptxas_cpu']:.2f} | "
                     f"{empty_mb / r['ptxas_mb']:.2f} |")
    groups = ("production", "triton", "extra")
    lines = ["", *(s for s in (summary(rows, g, empty_cpu, empty_mb) for g in groups) if s)]
    if build:
        n, wall, mb, psum = build
        lines.append(f"production corpus in one `tmemlint --jobs 2` run: {n} files, {wall:.1f} s, {mb:.0f} MB; the "
                     f"sum of the per-file ptxas times is {psum:.1f} s: x{wall / psum:.2f}")
    p = start["python -c pass"]
    lines.append(f"start-up (minimum of 20): python -c pass {p * 1000:.1f} ms, tmemlint --version "
                 f"{start['tmemlint --version'] * 1000:.1f} ms (x{start['tmemlint --version'] / p:.2f}), tmemlint rules "
                 f"{start['tmemlint rules'] * 1000:.1f} ms (x{start['tmemlint rules'] / p:.2f})")
    lines.append("start-up floor (CPU time, minimum of 10; peak memory): " + ", ".join(
        f"{k} {t * 1000:.0f} ms {mb:.0f} MB" for k, (t, mb) in low.items()) + "; the floor ratios of the table "
        "divide the last by ptxas's CPU time and memory on each file")
    lines.append(f"load average (1 min) before {load_before[0]:.2f}, after {load_after[0]:.2f}; sampled before each "
                 f"measurement: median {statistics.median(LOADS):.2f}, max {max(LOADS):.2f}; {os.cpu_count()} cores")
    text = "\n".join(table + lines) + "\n"
    return _write_outputs(args, rows, text)


if __name__ == "__main__":
    raise SystemExit(main())
