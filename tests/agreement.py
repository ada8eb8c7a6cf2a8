"""Source mode against compile mode, measured (issue 27, item 3): for each ``.cu``, the findings of both modes keyed
by (code, source file, line), each key classified.

Source mode reads the ``.cu`` without a compiler; compile mode lints nvcc's ``-ptx -lineinfo`` output with every
finding mapped to the ``.cu`` line through the ``.loc`` directives (``tmemlint.compile``).  A key is one finding
whatever it groups: a grouped finding (one root cause, several places) is one (code, file, line) in both modes.

Kinds of row:

* ``equal``: both modes report it.
* ``tm901``: source mode says where it cannot see (TM900/TM901, or TM903, a fault in the C++ operand constraints
  that nvcc's PTX does not show); allowed.
* ``blind``: compile mode only, on a kernel for which source mode reported TM900/TM901 (it does not claim to have
  read it, and the rules that depend on what it could not see are dropped); allowed.
* ``source-only``: source mode reports what compile mode does not: a disagreement (a false finding of source mode,
  or a gap of the PTX analysis).
* ``compile-only``: compile mode reports what source mode misses on a kernel it claims to have read: a
  disagreement.

Disagreements are allowed only when listed, with their reason, in ``tests/data/agreement_differences.json``
(``tests/test_agreement.py`` fails on any other).  Run as a script on a folder of third-party sources
(``python tests/agreement.py DIR -I DIR/include``) it prints the table and its totals; nvcc runs one file at a time.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from tmemlint.compile import map_findings
from tmemlint.engine import Options, lint_file, lint_module
from tmemlint.findings import Finding
from tmemlint.frontend.parser import parse_text
from tmemlint.names import base_name

ROOT = Path(__file__).resolve().parents[1]
DIFFERENCES = ROOT / "tests" / "data" / "agreement_differences.json"

#: Source-mode codes that say where it cannot see (a kernel with one of them is not claimed as read).
BLIND_CODES = frozenset({"TM900", "TM901"})
#: Codes only source mode can report (the fault is in the C++, which nvcc's PTX does not show).
SOURCE_ONLY_CODES = frozenset({"TM903"})
ALLOWED = frozenset({"equal", "tm901", "blind"})
KINDS = ("equal", "tm901", "blind", "source-only", "compile-only")


@dataclass(frozen=True, order=True)
class Key:
    """One finding as both modes can name it: the rule code, the source file (POSIX, relative to the run's base
    folder) and its 1-based line."""

    path: str
    line: int
    code: str


@dataclass(frozen=True, order=True)
class Row:
    """One key of one checked file, classified (``kind``: one of ``KINDS``); ``severity`` is the reporting mode's
    (source mode's where both report it) and ``kernel`` the short name of the kernel it is in ("" when unknown)."""

    checked: str
    key: Key
    kind: str
    severity: str
    kernel: str

    def as_json(self) -> dict[str, object]:
        return {"checked": self.checked, "file": self.key.path, "line": self.key.line, "code": self.key.code,
                "kind": self.kind}


@dataclass(frozen=True)
class Outcome:
    """The rows of one checked file; ``error`` is why compile mode (or source mode) gave no findings (nvcc rejected
    the file, ...), "" when both ran."""

    checked: str
    rows: tuple[Row, ...]
    error: str = ""


def _rel(path: str, base: Path) -> str:
    full = Path(os.path.normpath(os.path.join(os.getcwd(), path)))
    try:
        return full.relative_to(base).as_posix()
    except ValueError:
        return full.as_posix()


def _index(findings: Iterable[Finding], base: Path) -> dict[Key, Finding]:
    out: dict[Key, Finding] = {}
    for f in findings:
        out.setdefault(Key(_rel(f.path, base), f.line, f.code), f)
    return out


def classify(checked: str, source: Sequence[Finding], compiled: Sequence[Finding], base: Path) -> tuple[Row, ...]:
    """The rows of one file from the findings of source mode and compile mode (paths relative to the current
    folder or absolute; keys relative to ``base``)."""
    s, c = _index(source, base), _index(compiled, base)
    blind_kernels = {base_name(f.function) for f in source if f.code in BLIND_CODES}
    rows = []
    for key in sorted(set(s) | set(c)):
        f = s.get(key) or c[key]
        kernel = base_name(f.function)
        if key in s and key in c:
            kind = "equal"
        elif key in s:
            kind = "tm901" if key.code in BLIND_CODES | SOURCE_ONLY_CODES else "source-only"
        elif kernel in blind_kernels or "" in blind_kernels:
            kind = "blind"
        else:
            kind = "compile-only"
        rows.append(Row(checked, key, kind, f.severity.value, kernel))
    return tuple(rows)


@contextlib.contextmanager
def _cwd(folder: Path) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(old)


def compare(path: Path, options: Options | None = None, *, cwd: Path | None = None, ptx: Path | None = None,
            base: Path = ROOT) -> Outcome:
    """Both modes on ``path`` with ``options`` (run from ``cwd``, default the current folder).  Compile mode lints
    ``ptx`` (nvcc's ``-arch=sm_100a -ptx -lineinfo`` output of ``path``, e.g. a committed one) when given, else
    runs nvcc."""
    opts = options or Options()
    checked = _rel(str(path), base)
    with _cwd(cwd or Path.cwd()):
        src = lint_file(str(path), options=opts)
        if src.error is not None:
            return Outcome(checked, (), f"source mode: {src.error}")
        if ptx is not None:
            module = parse_text(ptx.read_text(encoding="utf-8", errors="replace"), str(ptx))
            compiled = map_findings(lint_module(module, str(ptx), opts), module, str(path),
                                    path.read_text(encoding="utf-8", errors="replace"))
        else:
            res = lint_file(str(path), options=dataclasses.replace(opts, compile=True))
            if res.error is not None:
                return Outcome(checked, (), f"compile mode: {str(res.error).splitlines()[0]}")
            compiled = res.findings
        return Outcome(checked, classify(checked, src.findings, compiled, base))


def load_differences(path: Path = DIFFERENCES) -> dict[tuple[str, str, int, str, str], str]:
    """The explained disagreements: (checked file, file, line, code, kind) → reason."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return {(d["checked"], d["file"], int(d["line"]), d["code"], d["kind"]): d["reason"] for d in data["differences"]}


def ident(row: Row) -> tuple[str, str, int, str, str]:
    return (row.checked, row.key.path, row.key.line, row.key.code, row.kind)


def totals(outcomes: Iterable[Outcome]) -> Counter[str]:
    """Rows per kind over ``outcomes``, plus ``files`` (both modes ran) and ``rejected`` (one mode gave no
    findings)."""
    count: Counter[str] = Counter()
    for o in outcomes:
        count["rejected" if o.error else "files"] += 1
        for r in o.rows:
            count[r.kind] += 1
            if r.kind in ("source-only", "compile-only") and r.severity == "error":
                count[f"{r.kind} errors"] += 1
    return count


def table(outcomes: Sequence[Outcome]) -> str:
    """Every row that is not ``equal`` (and every rejected file), then the totals: the printed form."""
    lines = []
    for o in outcomes:
        if o.error:
            lines.append(f"{o.checked}: not compared ({o.error})")
        for r in o.rows:
            if r.kind != "equal":
                lines.append(f"{r.kind:12} {r.key.code} {r.key.path}:{r.key.line} [{r.severity}] {r.kernel}"
                             + (f"  (checked {o.checked})" if r.checked != r.key.path else ""))
    t = totals(outcomes)
    lines.append(", ".join(f"{k}: {t[k]}" for k in ("files", "rejected", *KINDS, "source-only errors",
                                                       "compile-only errors")))
    return "\n".join(lines)


def _main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, help="a folder of .cu files (searched recursively)")
    ap.add_argument("-I", dest="include", action="append", default=[], help="include folder (both modes)")
    ap.add_argument("-D", dest="define", action="append", default=[], help="NAME[=VALUE] (both modes)")
    ap.add_argument("--nvcc-arg", action="append", default=[], help="extra nvcc argument (compile mode)")
    ap.add_argument("--json", type=Path, help="write every row here")
    ns = ap.parse_args(argv)
    base = ns.folder.resolve()
    opts = Options(include_dirs=tuple(str(Path(i).resolve()) for i in ns.include),
                   nvcc_args=tuple(ns.nvcc_arg),
                   defines=dict((d.split("=", 1) + ["1"])[:2] for d in ns.define))
    outcomes = []
    for cu in sorted(base.rglob("*.cu")):
        o = compare(cu, opts, cwd=cu.parent, base=base)
        outcomes.append(o)
        bad = [r for r in o.rows if r.kind not in ALLOWED]
        print(f"{o.checked}: {len(o.rows)} rows, {len(bad)} disagreements{' ' + o.error if o.error else ''}",
              file=sys.stderr, flush=True)
    print(table(outcomes))
    if ns.json:
        ns.json.write_text(json.dumps({"rows": [r.as_json() for o in outcomes for r in o.rows],
                                       "rejected": {o.checked: o.error for o in outcomes if o.error}}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(_main())
