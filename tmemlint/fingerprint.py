"""Fingerprints: a stable identity for a finding that survives unrelated edits of its file.

A fingerprint hashes (rule code, the function's unqualified name (``tmemlint.names.base_name``: a kernel is
``gemm_kernel`` whether PTX calls it ``_ZN7cutlass4gemm11gemm_kernel...`` or source mode reads it from the
``.cu``), normalized text of the offending line, occurrence index), where
the occurrence index counts earlier findings of the same file with the same first three parts (in position
order).  The line number, the column and the message are left out, so inserting or deleting lines above a
finding, re-indenting it or adding a comment to its line keeps its fingerprint.  SARIF writes it as
``partialFingerprints["tmemlint/v1"]``; the baseline file stores the same strings.
"""

from __future__ import annotations

import re
from typing import Sequence

from tmemlint.findings import Finding
from tmemlint.names import base_name

#: The key of the fingerprint in SARIF ``partialFingerprints`` (versioned: a change of the recipe bumps it).
FINGERPRINT_KEY = "tmemlint/v2"

_SPACE = re.compile(r"\s+")


def normalize_line(text: str) -> str:
    """``text`` without its comment (from ``//`` or ``/*``), surrounding blanks, and with inner runs of blanks
    collapsed to one space: ``"\\tadd.f32  %f1, %f2; // x"`` → ``"add.f32 %f1, %f2;"``."""
    cut = len(text)
    for marker in ("//", "/*"):
        i = text.find(marker)
        if 0 <= i < cut:
            cut = i
    return _SPACE.sub(" ", text[:cut]).strip()


def fingerprint(code: str, function: str | None, line_text: str, occurrence: int) -> str:
    """The fingerprint (32 lowercase hex digits) of one finding: see the module docstring."""
    import hashlib  # here: OpenSSL's module costs about 3 ms of start-up, and a clean file has no finding

    key = "\x1f".join((code, base_name(function), normalize_line(line_text), str(occurrence)))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def assign_fingerprints(findings: list[Finding], lines: Sequence[str]) -> None:
    """Set ``fingerprint`` on every finding of one file in place.

    ``lines`` are the file's lines split at LF only, as the parser counts them (index 0 is line 1); a finding whose line is outside them hashes an empty line.
    Occurrence indices are counted in ``Finding.sort_key`` order, so the result does not depend on the order of
    ``findings``."""
    seen: dict[tuple[str, str, str], int] = {}
    for f in sorted(findings, key=Finding.sort_key):
        text = lines[f.line - 1] if 1 <= f.line <= len(lines) else ""
        base = (f.code, base_name(f.function), normalize_line(text))
        n = seen.get(base, 0)
        seen[base] = n + 1
        f.fingerprint = fingerprint(f.code, f.function, text, n)
