"""Fuzzing target for tmemlint, meant to run for hours outside CI (hypothesis, no extra dependency).

    python fuzz/fuzz_lint.py --minutes 60 --out fuzz/findings

Three targets take turns until the time is up:

* ``generated``: kernels from ``tests/ptx_gen.py`` with known ground truth; TM101 must be reported exactly when
  the generator left a path to ``ret`` without a dealloc by warp 0 (and TM104 exactly when one deallocs twice),
  and nothing else.
* ``mutated``: real PTX (``../shared/corpus/triton/*.sm100.ptx``, ``fixtures/nvcc/*.ptx``, ``examples/*.ptx``)
  with lines deleted, duplicated or moved, truncated, random bytes inserted or operands swapped: ``lint_bytes``
  never raises, a TM900 is on a line inside the file, two runs give the same findings.
* ``bytes``: arbitrary bytes, optionally behind a valid PTX header.

Every input is run under a time limit (``--timeout`` seconds, SIGALRM); a failure (exception, wrong verdict, time
limit, nondeterminism) is written to ``OUT/<target>-<n>.ptx`` with the reason in ``OUT/<target>-<n>.txt`` and the
run goes on.  A summary (inputs per target, failures, slowest input, peak memory) is printed at the end and every
``--report`` seconds.
"""

from __future__ import annotations

import argparse
import resource
import signal
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ptx_gen import mutate, mutations, programs  # noqa: E402
from tmemlint.engine import lint_bytes  # noqa: E402


class InputTimeout(Exception):
    """One input took longer than the per-input time limit."""


def corpus_files() -> list[Path]:
    """The real PTX files the ``mutated`` target starts from (those that exist)."""
    files = sorted((ROOT.parent / "shared" / "corpus" / "triton").glob("*.sm100.ptx"))
    files += sorted((ROOT / "fixtures" / "nvcc").glob("*.ptx")) + sorted((ROOT / "examples").glob("*.ptx"))
    return files


def check_input(data: bytes, expected: set[str] | None = None) -> str | None:
    """Lint ``data`` twice; the reason it fails a property, or None.  ``expected``: the exact set of codes."""
    first = lint_bytes(data, "fuzz.ptx")
    lines = data.count(b"\n") + 1
    for f in first.findings:
        if f.code == "TM900" and not 1 <= f.line <= lines:
            return f"TM900 on line {f.line} outside the file ({lines} lines)"
        if f.code == "TM901" and "internal error" in f.message:
            return f"internal error reported as TM901: {f.message}"
    second = lint_bytes(data, "fuzz.ptx")
    key = [(f.line, f.column, f.code, f.message) for f in first.findings]
    if key != [(f.line, f.column, f.code, f.message) for f in second.findings]:
        return "two runs differ"
    if expected is not None and {f.code for f in first.findings} != expected:
        return f"codes {sorted({f.code for f in first.findings})} != ground truth {sorted(expected)}"
    return None


class Fuzzer:
    """Runs the targets, records failures and statistics."""

    def __init__(self, out: Path, timeout: float):
        self.out = out
        self.timeout = timeout
        self.counts: dict[str, int] = {}
        self.failures: list[str] = []
        self.slowest = (0.0, "")
        out.mkdir(parents=True, exist_ok=True)
        self.corpus = [(p.name, p.read_bytes()) for p in corpus_files()]

    def _alarm(self, *_):
        raise InputTimeout()

    def run_one(self, target: str, data: bytes, expected: set[str] | None = None) -> None:
        """Check one input under the time limit and record the outcome."""
        self.counts[target] = self.counts.get(target, 0) + 1
        signal.signal(signal.SIGALRM, self._alarm)
        signal.setitimer(signal.ITIMER_REAL, self.timeout)
        t0 = time.perf_counter()
        try:
            reason = check_input(data, expected)
        except InputTimeout:
            reason = f"took more than {self.timeout} s"
        except BaseException as e:  # noqa: BLE001 - every escape is a finding
            if isinstance(e, KeyboardInterrupt):
                raise
            reason = "exception escaped:\n" + traceback.format_exc()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        dt = time.perf_counter() - t0
        if dt > self.slowest[0]:
            self.slowest = (dt, f"{target} #{self.counts[target]} ({len(data)} bytes)")
        if reason is not None:
            n = len(self.failures) + 1
            (self.out / f"{target}-{n}.ptx").write_bytes(data)
            (self.out / f"{target}-{n}.txt").write_text(reason + "\n")
            self.failures.append(f"{target}-{n}: {reason.splitlines()[0] if reason else reason}")
            print(f"FAILURE {target}-{n}: {reason}", flush=True)

    def batch(self, examples: int) -> None:
        """One batch of each target (hypothesis draws fresh random inputs each call)."""
        cfg = settings(max_examples=examples, deadline=None, database=None, derandomize=False,
                       suppress_health_check=list(HealthCheck))

        @cfg
        @given(programs(depth=4))
        def generated(p):
            exp = ({"TM101"} if p.leaks else set()) | ({"TM104"} if p.double_frees else set())
            self.run_one("generated", p.text.encode(), exp)

        @cfg
        @given(st.integers(0, max(0, len(self.corpus) - 1)), st.lists(mutations(), min_size=1, max_size=4))
        def mutated(i, muts):
            data = self.corpus[i][1]
            for m in muts:
                data = mutate(data, *m)
            self.run_one("mutated", data)

        @cfg
        @given(st.booleans(), st.binary(max_size=400))
        def raw(header, blob):
            prefix = b".version 8.7\n.target sm_100a\n.address_size 64\n" if header else b""
            self.run_one("bytes", prefix + blob)

        generated()
        if self.corpus:
            mutated()
        raw()

    def summary(self, elapsed: float) -> str:
        """Inputs per target, failures, the slowest input and peak memory so far."""
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return (f"[{elapsed / 60:.1f} min] inputs {dict(sorted(self.counts.items()))}, failures "
                f"{len(self.failures)}, slowest {self.slowest[0]:.2f} s ({self.slowest[1]}), peak memory "
                f"{peak:.0f} MB")


def main(argv: list[str] | None = None) -> int:
    """Command line: ``--minutes``, ``--out``, ``--timeout``, ``--batch``, ``--report``; exit 1 on any failure."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--out", type=Path, default=ROOT / "fuzz" / "findings")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per input")
    ap.add_argument("--batch", type=int, default=200, help="examples per target per batch")
    ap.add_argument("--report", type=float, default=300.0, help="seconds between summaries")
    args = ap.parse_args(argv)
    fz = Fuzzer(args.out, args.timeout)
    start = last = time.monotonic()
    while time.monotonic() - start < args.minutes * 60:
        fz.batch(args.batch)
        if time.monotonic() - last >= args.report:
            last = time.monotonic()
            print(fz.summary(last - start), flush=True)
    print(fz.summary(time.monotonic() - start), flush=True)
    for f in fz.failures:
        print("  " + f)
    return 1 if fz.failures else 0


if __name__ == "__main__":
    sys.exit(main())
