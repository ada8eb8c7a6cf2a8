"""The result cache of ``tmemlint.entry``: a re-run on unchanged inputs is answered from the cache, any change to
an input or a configuration file misses it, and ``--no-cache`` bypasses it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT
from tmemlint.frontend.parser import STANDALONE_MAX_CHARS

BAD = ROOT.parent / "shared" / "cases" / "01_ncols_not_pow2" / "bad.ptx"
SRC = """.version 9.0
.target sm_100a
.address_size 64
.visible .entry k()
{
  .reg .b32 %r<3>;
  .shared .align 4 .b32 slot;
  mov.u32 %r1, 96;
  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], %r1;
  ld.shared.b32 %r2, [slot];
  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r2, %r1;
  ret;
}
"""
#: ``SRC`` past the generated parser's per-process budget (``parser.STANDALONE_MAX_CHARS``), so that Lark with
#: lark-cython parses it and its LALR tables are kept in the cache (the small-file path never loads them)
BIG = SRC + "// a comment line that only makes the text long enough for Lark's own parser\n" * \
    (STANDALONE_MAX_CHARS // 70 + 1)


def run(args, cache: Path, cwd: Path):
    env = dict(os.environ, TMEMLINT_CACHE_DIR=str(cache))
    env.pop("TMEMLINT_NO_CACHE", None)
    return subprocess.run([sys.executable, "-P", "-m", "tmemlint", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=120)


def entries(cache: Path) -> list[Path]:
    """The result entries (not the parser's LALR tables, kept in ``parser/`` beside them)."""
    return sorted(p for p in cache.rglob("*") if p.is_file() and p.parent.name != "parser")


def test_second_run_is_answered_from_the_cache(tmp_path):
    k = tmp_path / "k.ptx"
    k.write_text(SRC)
    cache = tmp_path / "cache"
    first = run(["--format", "concise", "k.ptx"], cache, tmp_path)
    assert first.returncode == 1
    assert [ln.split(":")[1:3] for ln in first.stdout.splitlines()] == [["9", "3"], ["11", "3"]]
    assert len(entries(cache)) == 1
    stamp = entries(cache)[0].stat().st_mtime_ns
    second = run(["--format", "concise", "k.ptx"], cache, tmp_path)
    assert (second.returncode, second.stdout, second.stderr) == (first.returncode, first.stdout, first.stderr)
    assert [e.stat().st_mtime_ns for e in entries(cache)] == [stamp]


def test_changed_input_or_config_misses_the_cache(tmp_path):
    k = tmp_path / "k.ptx"
    k.write_text(SRC)
    cache = tmp_path / "cache"
    assert run(["k.ptx"], cache, tmp_path).returncode == 1
    k.write_text(SRC.replace("96", "128"))
    assert run(["k.ptx"], cache, tmp_path).returncode == 0
    (tmp_path / "tmemlint.toml").write_text('ignore = ["TM102"]\n')
    k.write_text(SRC)
    assert run(["k.ptx"], cache, tmp_path).returncode == 0
    assert len(entries(cache)) == 3


def test_no_cache_writes_no_result(tmp_path):
    k = tmp_path / "k.ptx"
    k.write_text(SRC)
    cache = tmp_path / "cache"
    assert run(["--no-cache", "k.ptx"], cache, tmp_path).returncode == 1
    assert entries(cache) == []


def test_parser_tables_are_kept_once_and_reused(tmp_path):
    k = tmp_path / "k.ptx"
    k.write_text(BIG)
    cache = tmp_path / "cache"
    assert run(["--no-cache", "k.ptx"], cache, tmp_path).returncode == 1
    tables = sorted((cache / "parser").iterdir())
    assert [(p.name.startswith("ptx-"), p.suffixes[-1]) for p in tables] == [(True, ".lark"), (True, ".sha256")]
    assert tables[0].stat().st_mode & 0o777 == 0o600
    stamps = [p.stat().st_mtime_ns for p in tables]
    assert run(["--no-cache", "k.ptx"], cache, tmp_path).returncode == 1
    assert [p.stat().st_mtime_ns for p in sorted((cache / "parser").iterdir())] == stamps


def test_corrupt_parser_tables_are_rebuilt(tmp_path):
    k = tmp_path / "k.ptx"
    k.write_text(BIG)
    cache = tmp_path / "cache"
    assert run(["--no-cache", "k.ptx"], cache, tmp_path).returncode == 1
    table = next(p for p in (cache / "parser").iterdir() if p.suffix == ".lark")
    table.write_bytes(b"not a pickle")
    again = run(["--no-cache", "--format", "concise", "k.ptx"], cache, tmp_path)
    assert again.returncode == 1
    assert [ln.split(":")[1:3] for ln in again.stdout.splitlines()] == [["9", "3"], ["11", "3"]]
    assert again.stderr == "Found 2 errors in 1 file\n"  # no warning about the tables


def test_parser_tables_damaged_in_one_byte_are_not_loaded(tmp_path):
    """Lark checks only the grammar hash on the first line of its cache file; a flipped byte further on used to
    load and break every parse.  The recorded SHA-256 no longer matches, so the tables are rebuilt."""
    k = tmp_path / "k.ptx"
    k.write_text(BIG)
    cache = tmp_path / "cache"
    assert run(["--no-cache", "k.ptx"], cache, tmp_path).returncode == 1
    table = next(p for p in (cache / "parser").iterdir() if p.suffix == ".lark")
    data = bytearray(table.read_bytes())
    for at in range(len(data) // 2, len(data) // 2 + 64, 8):
        data[at] ^= 0x5A
    table.write_bytes(bytes(data))
    again = run(["--no-cache", "--format", "concise", "k.ptx"], cache, tmp_path)
    assert (again.returncode, again.stderr) == (1, "Found 2 errors in 1 file\n")
    assert [ln.split(":")[1:3] for ln in again.stdout.splitlines()] == [["9", "3"], ["11", "3"]]
    assert table.read_bytes() != bytes(data)


def test_a_glob_argument_is_not_cached(tmp_path):
    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / "a.ptx").write_text(SRC.replace("96", "128"))
    k = tmp_path / "k.ptx"
    k.write_text(SRC.replace("96", "128"))
    cache = tmp_path / "cache"
    assert run(["k.ptx", "gen/*.ptx"], cache, tmp_path).returncode == 0
    (tmp_path / "gen" / "g.ptx").write_text(SRC)  # a new file the glob now matches
    again = run(["--format", "concise", "k.ptx", "gen/*.ptx"], cache, tmp_path)
    assert again.returncode == 1
    assert [ln.split(":")[:3] for ln in again.stdout.splitlines()] == [["gen/g.ptx", "9", "3"], ["gen/g.ptx", "11", "3"]]
    assert entries(cache) == []
