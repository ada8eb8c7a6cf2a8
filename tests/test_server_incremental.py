"""The server's re-lint of large PTX documents kernel by kernel (``tmemlint.server.incremental``) gives exactly the
findings of a whole-file lint (span, message with the lines it names, related places, fingerprints), and an edit
inside one kernel analyses only that kernel again; the scheduler's forked lints are killed when superseded."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("pygls")

from tmemlint.engine import lint_document  # noqa: E402
from tmemlint import pipeline  # noqa: E402
from tmemlint.options import Options  # noqa: E402
from tmemlint.server import incremental  # noqa: E402
from tmemlint.server.scheduler import Cancelled, Job, run_job  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "gemm_leak_bad.ptx"


def big(copies: int = 3) -> str:
    """The leak example's kernel ``copies`` times under distinct names (about 2,430 lines each)."""
    text = EXAMPLE.read_text()
    i = text.index(".visible .entry")
    head, body = text[:i], text[i:]
    name = body.split("(", 1)[0].split()[-1]
    return head + "".join(body.replace(name, f"k{j}_{name}") for j in range(copies))


def shape(findings):
    return [(str(f), f.end_line, f.end_column, f.fingerprint, [(r.path, r.line, r.column, r.message) for r in f.related],
             [(r.line, r.message) for r in f.flow]) for f in findings]


def test_same_findings_and_only_the_edited_kernel_again(monkeypatch):
    text = big()
    opts = Options()
    got, known = incremental.lint_incremental(text, "big.ptx", opts, {})
    assert len(known) == 3 and shape(got) == shape(lint_document(text, "big.ptx", opts))
    assert [f.line for f in got if f.code == "TM101"] == [179, 179 + 2433, 179 + 2 * 2433]  # 2,433 lines a kernel

    calls = []
    real = pipeline.lint_part
    monkeypatch.setattr(pipeline, "lint_part", lambda *a: calls.append(a[3]) or real(*a))
    lines = text.split("\n")
    allocs = [i for i, s in enumerate(lines) if "tcgen05.alloc" in s]
    lines[allocs[1]] += " // typed"  # inside the second kernel, no new line
    edited = "\n".join(lines)
    got, known = incremental.lint_incremental(edited, "big.ptx", opts, known)
    assert len(calls) == 1 and shape(got) == shape(lint_document(edited, "big.ptx", opts))
    lines.insert(allocs[1], "\t// a new line in the second kernel")  # moves the third kernel: found, not redone
    edited = "\n".join(lines)
    got, known = incremental.lint_incremental(edited, "big.ptx", opts, known)
    assert len(calls) == 2 and shape(got) == shape(lint_document(edited, "big.ptx", opts))
    assert [f.line for f in got if f.code == "TM101"] == [179, 179 + 2433 + 1, 179 + 2 * 2433 + 1]


def test_a_superseded_forked_lint_is_killed(monkeypatch):
    monkeypatch.setattr("tmemlint.server.scheduler.FORK_MIN_LINES", 1)
    job = Job("file:///x.ptx", 1, 10, lambda: time.sleep(30))
    threading.Timer(0.3, job.cancelled.set).start()
    t0 = time.monotonic()
    with pytest.raises(Cancelled):
        run_job(job)
    assert time.monotonic() - t0 < 5
    assert run_job(Job("file:///x.ptx", 2, 10, lambda: [1, 2])) == [1, 2]  # the result comes back from the child
