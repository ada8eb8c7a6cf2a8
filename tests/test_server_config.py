"""The ``defines`` configuration key (read by the CLI and the language server alike): both spellings, the values
they give the CUDA source front end, and the errors that name the file and the key."""

from __future__ import annotations

import pytest

from tmemlint.config import ConfigError, Settings, clear_cache


def _options(tmp_path, toml: str):
    (tmp_path / "tmemlint.toml").write_text(toml)
    clear_cache()
    return Settings().options_for(str(tmp_path / "k.cu"))


def test_defines_list_and_table(tmp_path):
    o = _options(tmp_path, 'defines = ["USE_TMEM", "STAGES=4", "EMPTY="]\ninclude-dirs = ["inc"]\nctas-per-sm = 2\n')
    assert o.defines == {"USE_TMEM": "1", "STAGES": "4", "EMPTY": ""}
    assert o.include_dirs == (str(tmp_path / "inc"),) and o.ctas_per_sm == 2
    o = _options(tmp_path, '[defines]\nSTAGES = 4\nUSE_TMEM = true\nOFF = false\nNAME = "x"\n')
    assert o.defines == {"STAGES": "4", "USE_TMEM": "1", "OFF": "0", "NAME": "x"}


@pytest.mark.parametrize("toml,message", [
    ('defines = "X"\n', "defines: must be a list of \"NAME[=VALUE]\" strings or a table NAME = VALUE (got 'X')"),
    ('defines = ["1X=2"]\n', "defines: '1X' is not a macro name"),
    ('[defines]\nX = 1.5\n', "defines: X: the value must be a string, an integer or a boolean (got 1.5)"),
])
def test_defines_errors(tmp_path, toml, message):
    with pytest.raises(ConfigError) as e:
        _options(tmp_path, toml)
    assert str(e.value) == f"{tmp_path / 'tmemlint.toml'}: {message}"
