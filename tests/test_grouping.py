"""One finding per root cause (rules catalog "Grouping", issue 26): a missing tcgen05.wait::st that leaves N
hand-overs unordered is one TM303 at the tcgen05.st with the N places as related places, code-flow steps and a count
in the message; PTX instructions of one source position (``-lineinfo``) are one finding there; fingerprints stay put
under unrelated edits; a 0.3.0 baseline with TM302/TM303 rows is refused with a message that says why."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES
from tmemlint.baseline import BaselineError, read_baseline
from tmemlint.cli import app
from tmemlint.engine import Options, lint_text

BAD = FIXTURES / "patterns" / "st_handover_other_columns_bad.ptx"
ST, ARRIVE = 205, 215  # the tcgen05.st with no wait::st, and the hand-over after it (1-based PTX lines)


def _with_handovers(n: int) -> str:
    """The fixture with its faulty mbarrier.arrive repeated ``n`` times (n hand-overs of one unwaited st)."""
    lines = BAD.read_text().split("\n")
    return "\n".join(lines[:ARRIVE] + [lines[ARRIVE - 1]] * (n - 1) + lines[ARRIVE:])


def _tm303(text: str):
    return [f for f in lint_text(text, "k.ptx", Options()) if f.code == "TM303"]


def test_fifty_handovers_of_one_unwaited_st_are_one_finding_at_the_st():
    (f,) = _tm303(_with_handovers(50))
    assert (f.line, f.severity.value) == (ST, "error")
    assert [r.line for r in f.related] == list(range(ARRIVE, ARRIVE + 50))
    assert [s.line for s in f.flow] == [ST] + list(range(ARRIVE, ARRIVE + 50))
    assert f.flow[0].message == "tcgen05.st issued here"
    assert f.message.startswith("no tcgen05.wait::st after this tcgen05.st, which may still be writing TMEM at 50 "
                                "later places needing its completion: hand-over (mbarrier.arrive")
    assert f.message.endswith("; and 47 more")


def test_one_handover_is_named_in_the_singular():
    (f,) = _tm303(_with_handovers(1))
    assert "at 1 later place needing its completion: hand-over" in f.message and f"at line {ARRIVE}" in f.message


def test_the_fingerprint_survives_an_unrelated_edit_and_another_handover():
    (a,) = _tm303(_with_handovers(2))
    lines = _with_handovers(3).split("\n")
    (b,) = _tm303("\n".join(lines[:10] + ["\t// a comment above"] + lines[10:]))
    assert a.fingerprint == b.fingerprint and b.line == ST + 1


def test_sarif_and_json_carry_the_places(tmp_path):
    k = tmp_path / "k.ptx"
    k.write_text(_with_handovers(3))
    out = CliRunner().invoke(app, ["check", "--isolated", "--no-cache", "--select", "TM303", "--format", "sarif",
                                   str(k)]).stdout
    (res,) = json.loads(out)["runs"][0]["results"]
    assert [r["message"]["text"] for r in res["relatedLocations"]].count(
        "hand-over (mbarrier.arrive.release.cta.shared::cta.b64)") == 3
    steps = res["codeFlows"][0]["threadFlows"][0]["locations"]
    assert [s["location"]["physicalLocation"]["region"]["startLine"] for s in steps] == [ST, ARRIVE, ARRIVE + 1,
                                                                                         ARRIVE + 2]
    out = CliRunner().invoke(app, ["check", "--isolated", "--no-cache", "--select", "TM303", "--format", "json",
                                   str(k)]).stdout
    (f,) = json.loads(out)
    assert [(s["line"], s["message"]) for s in f["flow"]] == [(ST, "tcgen05.st issued here")] + [
        (ARRIVE + i, "hand-over (mbarrier.arrive.release.cta.shared::cta.b64)") for i in range(3)]


def test_ptx_instructions_of_one_source_line_are_one_finding_there(tmp_path, monkeypatch):
    """Two TM303 of PTX instructions under one ``.loc`` (an unrolled loop's copies of the st, each with its own
    hand-over) move to the same .cu line: one finding there, with both hand-overs and both PTX instructions."""
    import copy

    from tmemlint.findings import Group, Related
    from tmemlint.lineinfo import relocate

    for name in ("st_handover_other_columns_bad.cu", "st_handover_other_columns_bad.ptx"):
        shutil.copy(FIXTURES / "patterns" / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    ptx = "st_handover_other_columns_bad.ptx"
    lines = (tmp_path / ptx).read_text().split("\n")
    text = "\n".join(lines[:ST] + [lines[ST - 1]] + lines[ST:])  # the st twice, under the same .loc
    (tmp_path / ptx).write_text(text)
    (f,) = [f for f in lint_text(text, ptx, Options()) if f.code == "TM303"]
    g = copy.copy(f)  # the second copy: its st one line below (the same .loc), its hand-over at the next arrive
    g.line, g.end_line = f.line + 1, f.line + 1
    g.group = Group(f.group.headline, (Related(ptx, ARRIVE + 2, 2, "hand-over (bar.sync)"),))
    g.related, g.flow = list(g.group.places), [Related(ptx, ST + 1, 2, "tcgen05.st issued here")] + list(g.group.places)
    (one,) = relocate([f, g], text, ptx)
    assert (one.path, one.line) == ("st_handover_other_columns_bad.cu", 44)
    assert one.message.startswith("no tcgen05.wait::st after this tcgen05.st, which may still be writing TMEM at 2 "
                                  "later places needing its completion")
    assert [r.line for r in one.related if r.message == "the PTX instruction"] == [ST, ST + 1]


def _baseline(tmp_path, version: int, code: str):
    p = tmp_path / "base.json"
    p.write_text(json.dumps({"tool": "tmemlint", "version": version, "fingerprint": "tmemlint/v2", "findings": [
        {"path": "k.ptx", "code": code, "fingerprint": "0" * 32, "message": "m"}]}))
    return p


def test_a_0_3_baseline_with_tm303_rows_is_refused_with_the_reason(tmp_path):
    with pytest.raises(BaselineError, match=r"written by tmemlint 0\.3 \(format version 1\) has 1 TM303 finding, "
                                            r"which tmemlint now reports once per missing tcgen05\.wait::ld/wait::st"
                                            r".*write it again with --write-baseline"):
        read_baseline(str(_baseline(tmp_path, 1, "TM303")))


def test_a_0_3_baseline_of_other_rules_is_read_as_it_is(tmp_path):
    assert read_baseline(str(_baseline(tmp_path, 1, "TM101"))) == {("k.ptx", "TM101", "0" * 32)}
    assert read_baseline(str(_baseline(tmp_path, 2, "TM303"))) == {("k.ptx", "TM303", "0" * 32)}
