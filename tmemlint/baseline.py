"""Baselines: adopt tmemlint on existing code by recording today's findings and reporting only new ones.

``--write-baseline FILE`` writes::

    {"tool": "tmemlint", "version": 2, "fingerprint": "tmemlint/v2",
     "findings": [{"path": "kernels/gemm.ptx", "code": "TM101", "fingerprint": "3f2a…", "message": "…"}, …]}

``path`` is relative to the baseline file's folder (``/`` separators), so the baseline works from any current
folder; ``fingerprint`` is the SARIF partial fingerprint (``tmemlint.fingerprint``), so a finding stays
baselined when lines are inserted or removed above it.  ``message`` is for people only.  ``--baseline FILE``
drops every finding whose (path, code, fingerprint) is in FILE.

Version 2 (tmemlint 0.4): TM302 and TM303 are one finding per missing ``wait::ld``/``wait::st``, at the
``tcgen05.ld``/``tcgen05.st`` (rules catalog "Grouping"), where 0.3.0 (version 1) reported one finding per hand-over,
overwrite or dealloc.  A version-1 baseline is read as version 2 when it has no TM302/TM303 rows (the other rules'
fingerprints did not change); one with such rows is refused, with a message that says why and how to write it again:
its rows name the hand-over lines, which no finding is at any more, and a fingerprint is a one-way hash of its line.
"""

from __future__ import annotations

import json
import os
from typing import Iterable

from tmemlint.findings import Finding
from tmemlint.fingerprint import FINGERPRINT_KEY

FORMAT_VERSION = 2
#: Rules whose findings moved in format version 2 (one finding per root cause, at the st/ld).
REGROUPED = ("TM302", "TM303")


class BaselineError(Exception):
    """A baseline file that cannot be read or written; ``str(e)`` names the file."""


def _key_path(path: str, baseline_file: str) -> str:
    rel = os.path.relpath(os.path.abspath(path), os.path.dirname(os.path.abspath(baseline_file)))
    return rel.replace(os.sep, "/")


def baseline_entries(findings: Iterable[Finding], baseline_file: str) -> list[dict]:
    """The baseline rows of ``findings`` (sorted by path, code, fingerprint), paths relative to the folder of
    ``baseline_file``."""
    rows = [{"path": _key_path(f.path, baseline_file), "code": f.code, "fingerprint": f.fingerprint,
             "message": f.message} for f in findings]
    return sorted(rows, key=lambda r: (r["path"], r["code"], r["fingerprint"]))


def write_baseline(findings: Iterable[Finding], baseline_file: str) -> int:
    """Write ``findings`` to ``baseline_file`` (JSON, see module docstring); returns how many rows were written.
    Raises BaselineError when the file cannot be written."""
    rows = baseline_entries(findings, baseline_file)
    data = {"tool": "tmemlint", "version": FORMAT_VERSION, "fingerprint": FINGERPRINT_KEY, "findings": rows}
    try:
        with open(baseline_file, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2)
            fh.write("\n")
    except OSError as e:
        raise BaselineError(f"{baseline_file}: cannot write baseline: {e.strerror or e}") from None
    return len(rows)


def read_baseline(baseline_file: str) -> set[tuple[str, str, str]]:
    """The ``(path, code, fingerprint)`` keys of a baseline file (paths relative to its folder).  Raises
    BaselineError for a missing or malformed file, or one written with another fingerprint recipe."""
    try:
        with open(baseline_file, "rb") as fh:
            data = json.loads(fh.read().decode("utf-8"))
    except OSError as e:
        raise BaselineError(f"{baseline_file}: cannot read baseline: {e.strerror or e}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BaselineError(f"{baseline_file}: not a tmemlint baseline (invalid JSON: {e})") from None
    if not isinstance(data, dict) or data.get("tool") != "tmemlint" or not isinstance(data.get("findings"), list):
        raise BaselineError(f"{baseline_file}: not a tmemlint baseline (write one with --write-baseline)")
    if data.get("fingerprint") != FINGERPRINT_KEY:
        raise BaselineError(f"{baseline_file}: baseline uses fingerprints {data.get('fingerprint')!r}, this "
                            f"tmemlint uses {FINGERPRINT_KEY!r}; write it again with --write-baseline")
    version = data.get("version", 1)
    if version not in (1, FORMAT_VERSION):
        raise BaselineError(f"{baseline_file}: baseline format version {version!r} is not known to this tmemlint "
                            f"(it reads versions 1 and {FORMAT_VERSION}); write it again with --write-baseline")
    if version == 1:
        moved = sorted({row.get("code") for row in data["findings"] if isinstance(row, dict)} & set(REGROUPED))
        if moved:
            n = sum(1 for row in data["findings"] if isinstance(row, dict) and row.get("code") in REGROUPED)
            raise BaselineError(f"{baseline_file}: baseline written by tmemlint 0.3 (format version 1) has {n} "
                                f"{'/'.join(moved)} finding{'s' if n != 1 else ''}, which tmemlint now reports once "
                                f"per missing tcgen05.wait::ld/wait::st at the tcgen05.ld/st instead of at each "
                                f"hand-over, overwrite or dealloc, so they cannot be matched; write it again with "
                                f"--write-baseline")
    keys = set()
    for row in data["findings"]:
        if not (isinstance(row, dict) and all(isinstance(row.get(k), str) for k in ("path", "code", "fingerprint"))):
            raise BaselineError(f"{baseline_file}: malformed baseline entry {row!r}")
        keys.add((row["path"], row["code"], row["fingerprint"]))
    return keys


def filter_baseline(findings: Iterable[Finding], keys: set[tuple[str, str, str]], baseline_file: str) -> list[Finding]:
    """The findings that are not in the baseline ``keys`` (from ``read_baseline(baseline_file)``)."""
    return [f for f in findings if (_key_path(f.path, baseline_file), f.code, f.fingerprint) not in keys]
