"""``tmemlint check --profile`` / ``--profile-json`` (``tmemlint.profile``, issue 29): the exclusive accounting, the
phases a check reports, the totals against the process's CPU time, the workers' records, the output formats, and
that the findings do not change."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import FIXTURES, ROOT
from tmemlint import checkcmd, entry, profile
from tmemlint.options import Options
from tmemlint.pipeline import enabled_rules

SMALL = FIXTURES / "ptx" / "bitcast_rename_before_wait.ptx"
#: 13,416 lines of code, 7 kernels: cut into parts over processes with ``--jobs 2`` (``pipeline._lint_parts``).
SPLIT = FIXTURES / "real" / "nvcc" / "cutlass_style_templates.nolineinfo.ptx"
#: A CuTe DSL kernel whose path questions go to z3 (``analysis.feasibility``): 24 solver queries, 6 findings.
CUTE = FIXTURES / "real" / "cute" / "cute_mxf4.ptx"

#: Runs the console entry point with its arguments and prints, on the last line of standard error, the user +
#: system seconds of that process (``wait4`` of a fork: everything from the interpreter's start to its exit).
RUSAGE = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.executable, [sys.executable, "-P", "-m", "tmemlint"] + sys.argv[1:])
_, status, ru = os.wait4(pid, 0)
sys.stderr.write(f"\\nCPU {ru.ru_utime + ru.ru_stime}\\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def cli(tmp_path, *args: str) -> tuple[subprocess.CompletedProcess, float]:
    proc = subprocess.run([sys.executable, "-P", "-c", RUSAGE, "--no-cache", "--isolated", *args], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300)
    err, _, cpu = proc.stderr.rpartition("\nCPU ")
    proc.stderr = err
    return proc, float(cpu)


# ---- the accounting --------------------------------------------------------------------------------------------


def fake_clock(*times: float):
    it = iter(times)
    return lambda: next(it)


def test_nested_phases_are_charged_exclusively():
    """Clock readings 0 (start), 1, 3, 6, 10, 15, 21: startup gets its own 2.5 s plus 0-1 until the file begins;
    the file's driver 1-3 and 10-15, parse 3-6, a rule 6-10 minus nothing, and the end 15-21 goes to the run's
    driver."""
    p = profile.Profile(2.5, fake_clock(0, 1, 3, 6, 10, 15, 21), 7)
    p.begin_file("a.ptx")        # t=1: startup += 1
    p.push("parse")              # t=3: file driver += 2
    p.pop()                      # t=6: parse += 3
    p.push("rule:TM101")         # t=10: file driver += 4
    p.pop()                      # t=15: rule += 5
    rec = p.end_file()           # t=21: file driver += 6
    assert rec.path == "a.ptx" and rec.pid == 7
    assert rec.phases == {"driver": 12.0, "parse": 3.0, "rule:TM101": 5.0}
    assert rec.counts == {"files": 1}
    assert p.run.phases == {"startup": 3.5}
    assert rec.cpu == 20.0


def test_an_inner_phase_is_not_counted_in_the_outer_one():
    p = profile.Profile(None, fake_clock(0, 1, 2, 4, 8, 16), 1)
    p.push("rule:TM302")   # t=1: driver 1
    p.push("simulation")   # t=2: rule 1
    p.pop()                # t=4: simulation 2
    p.pop()                # t=8: rule 4 (1 + 4 = 5)
    run = p.finish()       # t=16: driver 8 (1 + 8 = 9)
    assert run.phases == {"driver": 9.0, "rule:TM302": 5.0, "simulation": 2.0}
    assert run.cpu == 16.0


def test_simulations_are_charged_to_the_phase_that_asked():
    """Clock 0, 1, 2, 5, 6, 7, 11, 12: a rule's simulation (2-5) and a sync query's (7-11) inside the rule."""
    p = profile.Profile(None, fake_clock(0, 1, 2, 5, 6, 7, 11, 12, 13), 1)
    p.push("rule:TM302")   # t=1
    p.push("simulation")   # t=2
    p.pop()                # t=5: 3 s asked by the rule
    p.push("sync")         # t=6
    p.push("simulation")   # t=7
    p.pop()                # t=11: 4 s asked by sync
    p.pop()                # t=12
    p.pop()                # t=13
    assert p.run.phases == {"driver": 1.0, "rule:TM302": 3.0, "simulation": 7.0, "sync": 2.0}
    assert p.run.simulation_by == {"rule:TM302": 3.0, "sync": 4.0}
    assert p.run.simulations_by == {"rule:TM302": 1, "sync": 1}


def test_total_adds_records_and_counts():
    a = profile.Record("a", 1, {"parse": 1.5, "driver": 0.5}, {"files": 1, "simulations": 3})
    b = profile.Record("b", 2, {"parse": 0.25, "solver": 2.0}, {"files": 1, "solver_queries": 4})
    t = profile.total([a, b])
    assert t.phases == {"parse": 1.75, "driver": 0.5, "solver": 2.0}
    assert t.counts == {"files": 2, "simulations": 3, "solver_queries": 4}


def test_ordered_puts_rules_after_lifecycle_and_unknown_names_last():
    got = [k for k, _ in profile.ordered({"driver": 1, "rule:TM302": 1, "parse": 1, "zzz": 1, "rule:TM101": 1,
                                          "startup": 1, "simulation": 1, "lifecycle": 1})]
    assert got == ["startup", "parse", "lifecycle", "rule:TM101", "rule:TM302", "simulation", "driver", "zzz"]


# ---- a profiled check --------------------------------------------------------------------------------------------


def profiled(tmp_path, *args: str) -> tuple[dict, subprocess.CompletedProcess, float]:
    out = tmp_path / "profile.json"
    proc, cpu = cli(tmp_path, "--format", "json", "--profile-json", str(out), *args)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(out.read_text()), proc, cpu


def test_the_phases_of_a_ptx_check(tmp_path):
    doc, _proc, _cpu = profiled(tmp_path, "--jobs", "1", str(SMALL))
    phases = doc["total"]["phases"]
    rules = {k[5:] for k in phases if k.startswith("rule:")}
    assert rules == {r.code for r in enabled_rules(Options())}
    others = {k for k in phases if not k.startswith("sync:")} - {f"rule:{c}" for c in rules}
    assert {k for k in phases if k.startswith("sync:")}  # the rules asked the sync model something
    # every stage of a PTX check with one analysed function and no finding; no CUDA front end, no nvcc, no line
    # information (the fixture has no .loc), no code flow (no finding)
    assert {"startup", "read", "prepass", "parser_load", "parse", "triage", "inline", "cfg", "values", "threads", "sites",
            "simulation", "suppress", "output", "driver", "sync"} <= others
    assert others <= set(profile.PHASES)
    assert not {"cuda", "compile", "lineinfo", "witness"} & others
    assert doc["unit"] == "CPU seconds (user + system), exclusive per phase"
    assert [f["path"] for f in doc["files"]] == [str(SMALL)]
    counts = doc["total"]["counts"]
    assert counts["files"] == 1 and counts["functions"] == 1
    from tmemlint.frontend.parser import parse_file

    module = parse_file(SMALL)
    assert counts["instructions"] == sum(len(f.instructions) for f in module.functions) > 0


def test_the_phases_add_up_to_the_process_cpu_time(tmp_path):
    """Each record's ``cpu_s`` is the sum of its phases (six decimals each), and the total is the run's plus the
    files'.  Against the process's own CPU time (``wait4``): the profile ends before the JSON is written and the
    interpreter shuts down, which the total leaves out; that remainder was 0.01-0.03 s on small files and up to
    0.09 s on a 2,400-line kernel (benchmarks/bench.py --phases, column ``exit``), so 0.1 s bounds it here, and the
    profile cannot exceed the process (1 ms: the rounding of ``ru_utime``/``ru_stime`` to clock ticks)."""
    doc, _proc, cpu = profiled(tmp_path, "--jobs", "1", str(SMALL))
    for rec in [doc["total"], doc["run"], *doc["files"]]:
        assert rec["cpu_s"] == pytest.approx(sum(rec["phases"].values()), abs=1e-6 * (len(rec["phases"]) + 1))
    assert doc["total"]["cpu_s"] == pytest.approx(doc["run"]["cpu_s"] + sum(f["cpu_s"] for f in doc["files"]),
                                                  abs=1e-5)
    assert doc["total"]["cpu_s"] <= cpu + 0.001
    assert cpu - doc["total"]["cpu_s"] < 0.1
    assert doc["run"]["phases"]["startup"] > 0.02  # at least the interpreter and the imports


def test_workers_return_their_records_and_the_total_sums_them(tmp_path):
    other = FIXTURES / "ptx" / "ld_wait_next_iteration_bad.ptx"  # with findings: code flows (witness)
    doc, _proc, _cpu = profiled(tmp_path, "--jobs", "2", str(SMALL), str(other))
    run_pid = doc["run"]["pid"]
    assert [f["path"] for f in doc["files"]] == [str(SMALL), str(other)]
    assert all(f["pid"] != run_pid for f in doc["files"])  # measured in the pool's processes
    assert doc["total"]["counts"]["files"] == 2
    for phase in doc["total"]["phases"]:
        assert doc["total"]["phases"][phase] == pytest.approx(
            doc["run"]["phases"].get(phase, 0.0) + sum(f["phases"].get(phase, 0.0) for f in doc["files"]), abs=1e-5)
    single, _p, _c = profiled(tmp_path, "--jobs", "1", str(SMALL), str(other))
    assert single["total"]["counts"] == doc["total"]["counts"]
    assert all(f["pid"] == single["run"]["pid"] for f in single["files"])


def test_a_file_cut_into_parts_counts_every_part(tmp_path):
    """With ``--jobs 2`` the 7 kernels of ``SPLIT`` are analysed by two processes (``pipeline._lint_parts``): the
    forked part returns its record, merged into the file's, so the counts are those of ``--jobs 1``."""
    one, _p, _c = profiled(tmp_path, "--jobs", "1", str(SPLIT))
    two, _p, _c = profiled(tmp_path, "--jobs", "2", str(SPLIT))
    assert one["total"]["counts"]["functions"] == 7
    assert two["total"]["counts"] == one["total"]["counts"]
    assert set(two["total"]["phases"]) == set(one["total"]["phases"])


def test_findings_are_the_same_with_and_without_the_profile(tmp_path):
    """On a CuTe DSL kernel whose guards go to the solver (6 findings) and a fixture with a finding."""
    files = [str(CUTE), str(FIXTURES / "ptx" / "ld_wait_next_iteration_bad.ptx")]
    plain, _cpu = cli(tmp_path, "--format", "json", "--jobs", "1", *files)
    doc, prof, _cpu = profiled(tmp_path, "--jobs", "1", *files)
    assert prof.stdout == plain.stdout and len(json.loads(plain.stdout)) == 7
    assert prof.returncode == plain.returncode == 1
    cute = doc["files"][0]
    assert cute["counts"]["solver_queries"] == 24 and cute["phases"]["solver"] > 0
    assert cute["phases"]["witness"] > 0


def test_the_table_on_standard_error(tmp_path):
    proc, _cpu = cli(tmp_path, "--profile", "--jobs", "1", str(SMALL))
    assert proc.returncode == 0
    err = proc.stderr.splitlines()
    assert err[0] == "All checks passed!"  # the summary first, then the profile
    assert err[1] == "===" + "-" * 74 + "==="
    assert err[2] == "tmemlint check profile: CPU seconds per phase (user + system, exclusive)"
    heads = [line for line in err[4:] if not line.startswith(" ")]
    assert [re.sub(r": [0-9.]+ s$", "", h) for h in heads] == [f"file {SMALL}", "run (outside files)",
                                                               "total (1 file)"]
    total_at = err.index(next(h for h in err if h.startswith("total (1 file): ")))
    total = float(err[total_at].split(": ")[1].removesuffix(" s"))
    rows = [re.fullmatch(r"\s+([0-9.]+)\s+([0-9.]+)%\s+(\S+)", line) for line in err[total_at + 1:-2]]
    assert all(rows)
    assert sum(float(m.group(1)) for m in rows) == pytest.approx(total, abs=5e-5 * len(rows))
    assert [m.group(3) for m in rows][0] == "startup" and [m.group(3) for m in rows][-1] == "driver"
    assert err[-2].startswith("  counts: files 1, functions 1, ")
    assert err[-1].startswith("  simulations by the phase that asked: ")


def test_parse_simple_reads_the_profile_options():
    assert checkcmd.parse_simple(["--profile", "a.ptx"]) == {"profile": True, "paths": ["a.ptx"]}
    assert checkcmd.parse_simple(["check", "--profile-json", "p.json", "a.ptx"]) == {"profile_json": "p.json",
                                                                                    "paths": ["a.ptx"]}
    assert checkcmd.parse_simple(["--profile-json=p.json", "a.ptx"]) == {"profile_json": "p.json", "paths": ["a.ptx"]}
    assert checkcmd.parse_simple(["a.ptx", "--profile-json"]) is None  # no value: typer says so


def test_a_profiled_run_is_not_answered_from_the_cache(tmp_path):
    f = tmp_path / "k.ptx"
    f.write_bytes(SMALL.read_bytes())
    assert entry.cache_key([str(f)]) is not None
    assert entry.cache_key(["--profile", str(f)]) is None
    assert entry.cache_key(["--profile-json", "p.json", str(f)]) is None
    assert entry.cache_key([f"--profile-json=p.json", str(f)]) is None


def test_the_option_is_in_the_help():
    from typer.testing import CliRunner

    from tmemlint.cli import app

    out = CliRunner().invoke(app, ["check", "--help"], env={"COLUMNS": "200", "TERM": "dumb"}).output
    assert "--profile " in out and "--profile-json" in out


def test_off_by_default_in_process():
    """The API and a plain check leave the module-level profile None (each boundary's test then fails at once)."""
    from tmemlint import api

    assert profile.ACTIVE is None
    assert api.check(SMALL.read_text()) == []
    assert profile.ACTIVE is None
    assert checkcmd.run_check([str(SMALL)], isolated=True, quiet=True, output_file=os.devnull) == 0
    assert profile.ACTIVE is None


def test_the_profile_module_is_typed_and_imports_nothing_of_tmemlint():
    text = (ROOT / "tmemlint" / "profile.py").read_text()
    assert not re.search(r"^\s*(from|import) tmemlint", text, re.M)
    assert not re.search(r"^(import|from) (time|resource)\b", text, re.M)  # clocks only in ``enable``
