"""Configuration: [tool.tmemlint] / tmemlint.toml discovery (nearest wins), command-line overrides, every key,
and errors that name the file and the key (exit 2, no traceback)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from ptx_samples import NCOLS_96
from tmemlint.checks.registry import RULES, load_all
from tmemlint.cli import app
from tmemlint.config import ConfigError, Overrides, Settings, clear_cache, find_config, glob_match, load_config

load_all()
CLEAN = NCOLS_96.replace(", 96;", ", 128;")


def run(*args: str):
    return CliRunner().invoke(app, ["check", "--format", "concise", *args])


def lines_codes(stdout: str) -> list[tuple[str, int, str]]:
    """``(path, line, code)`` of each concise output line."""
    out = []
    for row in stdout.splitlines():
        path, line, _col, rest = row.split(":", 3)
        out.append((path, int(line), rest.split()[0]))
    return out


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """tmp/pyproject.toml (no config yet), tmp/k.ptx, tmp/sub/k.ptx, tmp/sub/deep/k.ptx: all with TM102 at
    lines 16 and 18."""
    (tmp_path / "sub" / "deep").mkdir(parents=True)
    for d in (tmp_path, tmp_path / "sub", tmp_path / "sub" / "deep"):
        (d / "k.ptx").write_text(NCOLS_96)
    monkeypatch.chdir(tmp_path)
    clear_cache()
    yield tmp_path
    clear_cache()


def write(path, text):
    path.write_text(text)
    clear_cache()


def test_pyproject_select_and_nearest_wins(tree):
    write(tree / "pyproject.toml", '[project]\nname = "x"\n\n[tool.tmemlint]\nselect = ["TM1"]\nignore = ["TM102"]\n')
    write(tree / "sub" / "tmemlint.toml", 'select = ["invalid-ncols"]\n')
    r = run("k.ptx", "sub/k.ptx", "sub/deep/k.ptx")
    assert r.exit_code == 1
    assert lines_codes(r.stdout) == [("sub/deep/k.ptx", 16, "TM102"), ("sub/deep/k.ptx", 18, "TM102"),
                                     ("sub/k.ptx", 16, "TM102"), ("sub/k.ptx", 18, "TM102")]


def test_pyproject_without_table_is_passed_over_and_tmemlint_toml_wins_in_one_folder(tree):
    write(tree / "tmemlint.toml", 'ignore = ["TM102"]\n')
    write(tree / "sub" / "pyproject.toml", '[project]\nname = "x"\n')
    assert find_config(tree / "sub") == tree / "tmemlint.toml"
    r = run("sub/k.ptx")
    assert (r.exit_code, r.stdout) == (0, "")
    write(tree / "pyproject.toml", '[tool.tmemlint]\nselect = ["TM102"]\n')
    assert find_config(tree) == tree / "tmemlint.toml"


def test_command_line_overrides_config(tree):
    write(tree / "tmemlint.toml", 'ignore = ["TM102"]\nfail-on = "never"\n')
    assert run("k.ptx").stdout == ""
    r = run("--select", "TM102", "k.ptx")
    assert lines_codes(r.stdout) == [("k.ptx", 16, "TM102"), ("k.ptx", 18, "TM102")]
    assert r.exit_code == 0  # fail-on = "never" from the file
    assert run("--select", "TM102", "--fail-on", "error", "k.ptx").exit_code == 1
    assert run("--select", "TM102", "--ignore", "invalid-ncols", "--fail-on", "error", "k.ptx").exit_code == 0
    assert run("--isolated", "k.ptx").exit_code == 1


def test_extend_select(tree):
    write(tree / "tmemlint.toml", 'select = ["TM101"]\nextend-select = ["TM102"]\n')
    assert Settings().options_for("k.ptx").codes == {"TM101", "TM102"}
    assert lines_codes(run("k.ptx").stdout) == [("k.ptx", 16, "TM102"), ("k.ptx", 18, "TM102")]


def test_severity_override_and_fail_on(tree):
    write(tree / "tmemlint.toml", 'select = ["TM102"]\n[severity]\nTM102 = "warning"\n')
    r = run("k.ptx")
    assert r.stdout.splitlines()[0].startswith("k.ptx:16:2: TM102 [warning] ")
    assert r.exit_code == 0
    write(tree / "tmemlint.toml", 'select = ["TM102"]\nfail-on = "warning"\n[severity]\ninvalid-ncols = "warning"\n')
    assert run("k.ptx").exit_code == 1
    write(tree / "pyproject.toml", '[tool.tmemlint]\nselect = ["TM102"]\n[tool.tmemlint.severity]\nTM1 = "info"\n')
    (tree / "tmemlint.toml").unlink()
    write(tree / "pyproject.toml", (tree / "pyproject.toml").read_text())
    r = run("--fail-on", "warning", "k.ptx")
    assert "TM102 [info]" in r.stdout and r.exit_code == 0


def test_per_file_ignores_and_exclude(tree):
    write(tree / "pyproject.toml", '[tool.tmemlint]\nselect = ["TM102"]\nexclude = ["deep"]\n'
                                   '[tool.tmemlint.per-file-ignores]\n"sub/*.ptx" = ["tmem-leak", "TM102"]\n')
    r = run(".")
    assert lines_codes(r.stdout) == [("k.ptx", 16, "TM102"), ("k.ptx", 18, "TM102")]  # no ./ prefix
    r = run("sub/deep/k.ptx")  # named explicitly: checked although excluded
    assert lines_codes(r.stdout) == [("sub/deep/k.ptx", 16, "TM102"), ("sub/deep/k.ptx", 18, "TM102")]
    assert run("--exclude", "k.ptx", ".").stdout == ""
    assert Settings().options_for("sub/k.ptx").codes == set()


def test_ctas_per_sm_reaches_options(tree):
    write(tree / "tmemlint.toml", "ctas-per-sm = 2\n")
    assert Settings().options_for("k.ptx").ctas_per_sm == 2
    assert Settings(overrides=Overrides(ctas_per_sm=4)).options_for("k.ptx").ctas_per_sm == 4
    assert Settings(isolated=True).options_for("k.ptx").ctas_per_sm is None
    assert Settings().options_for("k.ptx").codes is None  # no selection keys: the registry's defaults


def test_config_flag_and_isolated(tree):
    write(tree / "tmemlint.toml", 'ignore = ["TM102"]\n')
    (tree / "other.toml").write_text('select = ["TM102"]\n')
    assert lines_codes(run("--config", "other.toml", "k.ptx").stdout) == [("k.ptx", 16, "TM102"),
                                                                          ("k.ptx", 18, "TM102")]
    (tree / "cfgdir").mkdir()
    (tree / "cfgdir" / "pyproject.toml").write_text('[tool.tmemlint]\nignore = ["TM102"]\n')
    assert run("--isolated", "--config", "cfgdir/pyproject.toml", "k.ptx").exit_code == 1
    assert run("--config", "cfgdir/pyproject.toml", "k.ptx").stdout == ""
    r = run("--config", "nope.toml", "k.ptx")
    assert (r.exit_code, r.stderr) == (2, "tmemlint: nope.toml: configuration file not found\n")


@pytest.mark.parametrize("name,text,message", [
    ("tmemlint.toml", "selct = [\"TM101\"]\n",
     "{f}: unknown key 'selct'; known keys: select, extend-select, ignore, severity, per-file-ignores, fail-on, "
     "ctas-per-sm, exclude, extend-exclude, force-exclude, respect-gitignore, include-dirs, defines, library-paths"),
    ("pyproject.toml", "[tool.tmemlint]\nfail_on = \"warning\"\n",
     "{f}: unknown key 'fail_on' in [tool.tmemlint] (did you mean 'fail-on'?); known keys: select, extend-select, "
     "ignore, severity, per-file-ignores, fail-on, ctas-per-sm, exclude, extend-exclude, force-exclude, "
     "respect-gitignore, include-dirs, defines, library-paths"),
    ("pyproject.toml", "[tool.tmemlint]\nselect = [\"TM999\"]\n",
     "{f}: [tool.tmemlint] select: unknown rule code or name 'TM999'"),
    ("tmemlint.toml", "ignore = [\"TM101,no-such-rule\"]\n", "{f}: ignore: unknown rule code or name 'no-such-rule'"),
    ("pyproject.toml", "[tool.tmemlint.severity]\nTM999 = \"error\"\n",
     "{f}: [tool.tmemlint.severity] TM999: unknown rule code or name 'TM999'"),
    ("tmemlint.toml", "[severity]\nTM301 = \"fatal\"\n",
     "{f}: [severity] TM301: severity must be one of error, warning, info (got 'fatal')"),
    ("pyproject.toml", "[tool.tmemlint.per-file-ignores]\n\"*.ptx\" = [\"TM1x\"]\n",
     "{f}: [tool.tmemlint.per-file-ignores] '*.ptx': unknown rule code or name 'TM1x'"),
    ("tmemlint.toml", "fail-on = \"sometimes\"\n",
     "{f}: fail-on: must be one of error, warning, info, never (got 'sometimes')"),
    ("tmemlint.toml", "ctas-per-sm = 0\n", "{f}: ctas-per-sm: must be an integer >= 1 (got 0)"),
    ("tmemlint.toml", "ctas-per-sm = \"2\"\n", "{f}: ctas-per-sm: must be an integer >= 1 (got '2')"),
    ("tmemlint.toml", "select = 3\n", "{f}: select: expected a list of rule codes or names"),
    ("tmemlint.toml", "exclude = [1]\n", "{f}: exclude: expected a list of glob patterns"),
    ("pyproject.toml", "[tool]\ntmemlint = 3\n", "{f}: tool.tmemlint must be a table"),
])
def test_config_errors_name_file_and_key(tree, name, text, message):
    write(tree / name, text)
    r = run("k.ptx")
    assert r.exit_code == 2
    assert r.stdout == ""
    assert r.stderr == "tmemlint: " + message.format(f=tree / name) + "\n"


def test_invalid_toml(tree):
    write(tree / "tmemlint.toml", "select = [\n")
    r = run("k.ptx")
    assert r.exit_code == 2
    assert r.stderr.startswith(f"tmemlint: {tree / 'tmemlint.toml'}: invalid TOML: ")
    assert "Traceback" not in r.stderr + r.stdout


def test_config_that_is_not_utf8(tree):
    (tree / "tmemlint.toml").write_bytes(b'select = ["TM1\xff"]\n')
    clear_cache()
    r = run("k.ptx")
    assert (r.exit_code, r.stderr) == (2, f"tmemlint: {tree / 'tmemlint.toml'}: invalid TOML: not UTF-8 text "
                                          "(invalid start byte at byte 14)\n")


def test_unrelated_broken_pyproject_is_ignored(tree):
    write(tree / "pyproject.toml", "[project\nname=")
    assert run("--select", "TM102", "k.ptx").exit_code == 1


def test_unknown_code_on_command_line():
    r = run("--select", "TM999", "k.ptx")
    assert (r.exit_code, r.stderr) == (2, "tmemlint: --select: unknown rule code or name 'TM999'\n")
    r = run("--ignore", "nope", "k.ptx")
    assert (r.exit_code, r.stderr) == (2, "tmemlint: --ignore: unknown rule code or name 'nope'\n")


def test_load_config_returns_none_without_table(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname='x'\n")
    assert load_config(tmp_path / "pyproject.toml") is None
    (tmp_path / "t.toml").write_text('select = ["ALL"]\n')
    assert load_config(tmp_path / "t.toml").select == frozenset(RULES)


@pytest.mark.parametrize("pattern,path,want", [
    ("*.ptx", "a/b/k.ptx", True),
    ("sub/*.ptx", "sub/k.ptx", True),
    ("sub/*.ptx", "sub/deep/k.ptx", False),
    ("sub/**/*.ptx", "sub/deep/k.ptx", True),
    ("sub/**/*.ptx", "sub/k.ptx", True),
    ("sub", "sub/deep/k.ptx", True),
    ("sub/deep", "sub/deep/k.ptx", True),
    ("deep", "sub/deep/k.ptx", True),
    ("dee", "sub/deep/k.ptx", False),
    ("k?.ptx", "k1.ptx", True),
    ("k[!1].ptx", "k1.ptx", False),
    ("./sub/", "sub/k.ptx", True),
    ("other/*.ptx", "sub/k.ptx", False),
])
def test_glob_match(tmp_path, pattern, path, want):
    assert glob_match(pattern, tmp_path / path, tmp_path) is want


def test_bad_override_values():
    with pytest.raises(ConfigError, match=r"--ctas-per-sm: must be an integer >= 1 \(got 0\)"):
        Settings(overrides=Overrides(ctas_per_sm=0))


def test_ctas_per_sm_reaches_the_column_budget_rule(tree):
    (tree / "k.ptx").write_text(NCOLS_96.replace(", 96;", ", 512;"))
    assert (run("k.ptx").exit_code, run("k.ptx").stdout) == (0, "")
    write(tree / "tmemlint.toml", "ctas-per-sm = 2\n")
    r = run("k.ptx")
    assert r.exit_code == 0  # a warning
    assert r.stdout == ("k.ptx:16:2: TM106 [warning] 512 columns per CTA x 2 CTAs per SM (configuration) = 1024 "
                        "columns, over 512: co-resident CTAs serialize in tcgen05.alloc, a deadlock if they wait "
                        "on each other\n")
    assert run("--ctas-per-sm", "1", "k.ptx").stdout == ""
