"""Configuration: ``[tool.tmemlint]`` in ``pyproject.toml`` or top-level keys in ``tmemlint.toml``.

For each checked file the nearest configuration wins: its folder, then each parent folder, is searched for
``tmemlint.toml`` (first) and for a ``pyproject.toml`` that has a ``[tool.tmemlint]`` table (a ``pyproject.toml``
without one is passed over).  ``--config FILE`` uses FILE for every file instead, ``--isolated`` uses none.  The
command line overrides the file: ``--select`` replaces the file's selection, ``--extend-select``/``--ignore`` apply
on top of it, ``--fail-on``/``--ctas-per-sm`` replace the file's values, ``--exclude`` replaces ``exclude``,
``--extend-exclude`` adds patterns, ``--[no-]force-exclude``/``--[no-]respect-gitignore`` replace the file's.

Keys (unknown keys and unknown rule codes are errors that name the file and the key)::

    select = ["TM1", "TM301"]            # codes, names or code prefixes; "ALL"
    extend-select = ["TM107"]
    ignore = ["TM301"]
    fail-on = "warning"                  # error | warning | info | never
    ctas-per-sm = 2                      # CTAs resident per SM, for the column budget (int >= 1)
    exclude = ["build", "third_party/**"]   # replaces DEFAULT_EXCLUDE (.git, .venv, node_modules, build, ...)
    extend-exclude = ["gen/**"]          # on top of exclude (or of its defaults)
    force-exclude = true                 # exclusions apply to files named on the command line too (pre-commit)
    respect-gitignore = false            # folder searches read what .gitignore / .ignore ignore too (default true)
    include-dirs = ["include"]           # folders for quoted #include in source mode (relative to this file)
    defines = ["USE_TMEM", "STAGES=4"]   # -D NAME[=VALUE] for the #if of CUDA sources (or a table NAME = VALUE)
    library-paths = ["third_party/**"]   # library headers: a finding there moves to the user's call (globs;
                                         # CUTLASS, CuTe, cccl and the toolkit's include folders always are)
    [tool.tmemlint.severity]             # ([severity] in tmemlint.toml)
    TM301 = "error"                      # error | warning | info
    [tool.tmemlint.per-file-ignores]
    "legacy/*.ptx" = ["TM301", "tmem-leak"]

Globs are matched against the path relative to the configuration file's folder (``/`` separators): ``*`` and
``?`` stay inside one folder, ``**`` crosses folders, ``[abc]`` is a class; a pattern also matches everything
below a folder it matches, and a pattern without ``/`` matches any single path component (``*_bad.ptx``,
``build``).  ``exclude`` applies to files found by searching folders or expanding globs (``tmemlint.discover``,
where a pattern without ``/`` is matched against each entry's name); a file named on the command line is checked
unless ``force-exclude`` is on.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from tmemlint.checks.registry import RULES, load_all, resolve_prefix
from tmemlint.options import Options

KEYS = ("select", "extend-select", "ignore", "severity", "per-file-ignores", "fail-on", "ctas-per-sm", "exclude",
        "extend-exclude", "force-exclude", "respect-gitignore", "include-dirs", "defines", "library-paths")
#: Folders and files skipped in folder searches unless ``exclude`` replaces this list (ruff's defaults, plus
#: ``build``, where CMake and setuptools leave copies of generated code): version-control and tool folders,
#: virtual environments and installed packages.
DEFAULT_EXCLUDE = (".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".mypy_cache", ".nox", ".pants.d",
                   ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", ".vscode", "__pypackages__",
                   "_build", "buck-out", "build", "dist", "node_modules", "site-packages", "venv")
SEVERITIES = ("error", "warning", "info")
FAIL_ON = ("error", "warning", "info", "never")


class ConfigError(Exception):
    """A configuration file (or command-line option) that cannot be used; ``str(e)`` names the file and the key,
    ready to print after ``tmemlint: ``."""


@dataclass(frozen=True, slots=True)
class Config:
    """One configuration file, validated.  ``source`` is the file (None for the built-in defaults); ``root`` the
    folder its globs are relative to; rule sets hold resolved codes; ``select`` None means the registry's
    defaults; ``per_file_ignores`` pairs a glob with the codes it ignores."""

    source: Path | None
    root: Path
    select: frozenset[str] | None = None
    extend_select: frozenset[str] = frozenset()
    ignore: frozenset[str] = frozenset()
    severity: tuple[tuple[str, str], ...] = ()
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = ()
    fail_on: str | None = None
    ctas_per_sm: int | None = None
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    force_exclude: bool | None = None
    respect_gitignore: bool | None = None
    include_dirs: tuple[str, ...] = ()
    #: ``-D`` definitions for CUDA sources: (name, value) pairs in file order (a bare name is ``"1"``).
    defines: tuple[tuple[str, str], ...] = ()
    #: Globs of library headers (``tmemlint.libraries``), relative to ``root``.
    library_paths: tuple[str, ...] = ()


@dataclass(slots=True)
class Overrides:
    """Command-line settings that override the configuration files (None or empty: not given).  Selectors are
    as typed: codes, names, prefixes, comma lists."""

    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    fail_on: str | None = None
    ctas_per_sm: int | None = None
    exclude: list[str] | None = None
    extend_exclude: list[str] = field(default_factory=list)
    force_exclude: bool | None = None
    respect_gitignore: bool | None = None


# ---------------------------------------------------------------------------------------------------- globs


@lru_cache(maxsize=512)
def _glob_regex(pattern: str) -> re.Pattern:
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and pattern.find("]", i + 2) > 0:
            j = pattern.find("]", i + 2)
            body = pattern[i + 1:j]
            body = "^" + body[1:] if body.startswith("!") else body
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = j + 1
            continue
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("(?s:" + "".join(out) + r")\Z")


def glob_match(pattern: str, path: str | os.PathLike, root: str | os.PathLike) -> bool:
    """Whether ``path`` (absolute, or relative to the current folder) matches ``pattern`` relative to ``root``
    (semantics in the module docstring)."""
    full = os.path.abspath(path)
    rel = os.path.relpath(full, os.path.abspath(root)).replace(os.sep, "/")
    if rel.startswith("../"):
        rel = full.replace(os.sep, "/")
    pat = pattern.strip().rstrip("/")
    if pat.startswith("./"):
        pat = pat[2:]
    rx = _glob_regex(pat)
    parts = rel.split("/")
    if "/" not in pat:
        return any(rx.match(p) for p in parts)
    return any(rx.match("/".join(parts[:k])) for k in range(1, len(parts) + 1))


# ---------------------------------------------------------------------------------------------------- files


def _read_toml(path: Path) -> dict:
    import tomllib  # here, not at the top: 7 ms of a check's start-up where no configuration file exists (issue 29)

    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror or e}") from None


def _table(path: Path) -> tuple[dict | None, str]:
    """The tmemlint table of ``path`` (None for a pyproject.toml without one) and its display name."""
    data = _read_toml(path)
    if path.name == "pyproject.toml":
        tool = data.get("tool")
        if not isinstance(tool, dict) or "tmemlint" not in tool:
            return None, "[tool.tmemlint]"
        table = tool["tmemlint"]
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: tool.tmemlint must be a table")
        return table, "[tool.tmemlint]"
    return data, ""


def _selectors(value: Any, where: str) -> frozenset[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of rule codes or names")
    codes: set[str] = set()
    for v in value:
        for s in (x.strip() for x in v.split(",")):
            if not s:
                continue
            got = resolve_prefix(s)
            if not got:
                raise ConfigError(f"{where}: unknown rule code or name {s!r}")
            codes.update(got)
    return frozenset(codes)


def _globs(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of glob patterns")
    return tuple(value)


def parse_config(table: dict, source: Path, prefix: str = "") -> Config:
    """Validate a tmemlint table read from ``source``.  ``prefix`` is how the table is named in messages
    (``[tool.tmemlint]`` for pyproject.toml, empty for tmemlint.toml).  Raises ConfigError."""
    load_all()

    def where(key: str) -> str:
        return f"{source}: {prefix + ' ' if prefix else ''}{key}"

    for key in table:
        if key not in KEYS:
            hint = f" (did you mean '{key.replace('_', '-')}'?)" if key.replace("_", "-") in KEYS else ""
            raise ConfigError(f"{source}: unknown key {key!r}{' in ' + prefix if prefix else ''}{hint}; "
                              f"known keys: {', '.join(KEYS)}")
    kw: dict[str, Any] = {}
    if "select" in table:
        kw["select"] = _selectors(table["select"], where("select"))
    if "extend-select" in table:
        kw["extend_select"] = _selectors(table["extend-select"], where("extend-select"))
    if "ignore" in table:
        kw["ignore"] = _selectors(table["ignore"], where("ignore"))
    if "severity" in table:
        sev = table["severity"]
        name = f"{prefix[:-1]}.severity]" if prefix else "[severity]"
        if not isinstance(sev, dict):
            raise ConfigError(f"{source}: {name} must be a table of CODE = \"error\" | \"warning\" | \"info\"")
        pairs = {}
        for k, v in sev.items():
            got = resolve_prefix(k)
            if not got:
                raise ConfigError(f"{source}: {name} {k}: unknown rule code or name {k!r}")
            if v not in SEVERITIES:
                raise ConfigError(f"{source}: {name} {k}: severity must be one of {', '.join(SEVERITIES)} "
                                  f"(got {v!r})")
            for c in got:
                pairs[c] = v
        kw["severity"] = tuple(sorted(pairs.items()))
    if "per-file-ignores" in table:
        pfi = table["per-file-ignores"]
        name = f"{prefix[:-1]}.per-file-ignores]" if prefix else "[per-file-ignores]"
        if not isinstance(pfi, dict):
            raise ConfigError(f"{source}: {name} must be a table of \"GLOB\" = [CODES]")
        kw["per_file_ignores"] = tuple((g, _selectors(v, f"{source}: {name} {g!r}")) for g, v in pfi.items())
    if "fail-on" in table:
        v = table["fail-on"]
        if v not in FAIL_ON:
            raise ConfigError(f"{where('fail-on')}: must be one of {', '.join(FAIL_ON)} (got {v!r})")
        kw["fail_on"] = v
    if "ctas-per-sm" in table:
        v = table["ctas-per-sm"]
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ConfigError(f"{where('ctas-per-sm')}: must be an integer >= 1 (got {v!r})")
        kw["ctas_per_sm"] = v
    if "include-dirs" in table:
        v = table["include-dirs"]
        if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
            raise ConfigError(f"{where('include-dirs')}: must be a list of folder names (got {v!r})")
        base = Path(source).parent if source is not None else Path(".")
        kw["include_dirs"] = tuple(os.path.normpath(os.path.join(base, x)) for x in v)
    if "defines" in table:
        kw["defines"] = parse_defines(table["defines"], where("defines"))
    if "exclude" in table:
        kw["exclude"] = _globs(table["exclude"], where("exclude"))
    if "extend-exclude" in table:
        kw["extend_exclude"] = _globs(table["extend-exclude"], where("extend-exclude"))
    if "library-paths" in table:
        kw["library_paths"] = _globs(table["library-paths"], where("library-paths"))
    for key in ("force-exclude", "respect-gitignore"):
        if key in table:
            if not isinstance(table[key], bool):
                raise ConfigError(f"{where(key)}: must be true or false (got {table[key]!r})")
            kw[key.replace("-", "_")] = table[key]
    return Config(source, source.parent, **kw)


_DEFINE_NAME = re.compile(r"[A-Za-z_]\w*")


def parse_defines(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    """``defines`` as (name, value) pairs: a list of ``"NAME"`` / ``"NAME=VALUE"`` strings (as ``-D`` takes them; a
    bare name is ``"1"``) or a table ``NAME = VALUE`` (a string, an integer or a boolean: ``true`` is ``"1"``,
    ``false`` ``"0"``).  Raises ConfigError naming ``where``."""
    pairs: list[tuple[str, str]] = []
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        items = []
        for v in value:
            name, eq, val = v.partition("=")
            items.append((name.strip(), val if eq else "1"))
    else:
        raise ConfigError(f"{where}: must be a list of \"NAME[=VALUE]\" strings or a table NAME = VALUE "
                          f"(got {value!r})")
    for name, val in items:
        if not _DEFINE_NAME.fullmatch(name):
            raise ConfigError(f"{where}: {name!r} is not a macro name")
        if isinstance(val, bool):
            val = "1" if val else "0"
        elif isinstance(val, int):
            val = str(val)
        elif not isinstance(val, str):
            raise ConfigError(f"{where}: {name}: the value must be a string, an integer or a boolean (got {val!r})")
        pairs.append((name, val))
    return tuple(pairs)


def load_config(path: str | os.PathLike) -> Config | None:
    """Read and validate one configuration file: a ``pyproject.toml`` (its ``[tool.tmemlint]`` table; None when
    it has none) or any other TOML file (top-level keys).  Raises ConfigError."""
    p = Path(path).absolute()
    table, prefix = _table(p)
    return None if table is None else parse_config(table, p, prefix)


CONFIG_NAMES = ("tmemlint.toml", "pyproject.toml")


def find_config(directory: str | os.PathLike) -> Path | None:
    """The nearest configuration file for files in ``directory``: ``tmemlint.toml`` or a ``pyproject.toml`` with
    ``[tool.tmemlint]``, in that folder or a parent.  Raises ConfigError for a broken ``tmemlint.toml`` or a
    broken ``pyproject.toml`` that mentions tmemlint."""
    return _find_config(Path(os.path.abspath(directory)))


@lru_cache(maxsize=1024)
def _find_config(d: Path) -> Path | None:
    for name in CONFIG_NAMES:
        p = d / name
        if not p.is_file():
            continue
        if name == "tmemlint.toml":
            return p
        try:
            table, _ = _table(p)
        except ConfigError:
            try:
                mentions = b"tmemlint" in p.read_bytes()
            except OSError:
                mentions = False
            if mentions:
                raise
            table = None
        if table is not None:
            return p
    return None if d.parent == d else _find_config(d.parent)


def clear_cache() -> None:
    """Forget the configuration files found so far (call after one was created, changed or removed; a
    ``Settings`` object also keeps the files it read, so make a new one)."""
    _find_config.cache_clear()


# ---------------------------------------------------------------------------------------------------- settings


class Settings:
    """Resolves the options of each checked file: its configuration (nearest file, ``--config`` or none) merged
    with the command-line ``overrides``.  Construction validates ``--config`` and the overrides and raises
    ConfigError; ``options_for``/``excluded`` raise ConfigError for a broken configuration file found on the
    way."""

    def __init__(self, config_file: str | os.PathLike | None = None, isolated: bool = False,
                 overrides: Overrides | None = None):
        load_all()
        self.isolated = isolated
        self.overrides = overrides or Overrides()
        self._fixed: Config | None = None
        self._fixed_set = False
        self._loaded: dict[Path, Config] = {}
        if config_file is not None:
            p = Path(config_file)
            if not p.is_file():
                raise ConfigError(f"{config_file}: configuration file not found")
            self._fixed = load_config(p) or Config(p.absolute(), p.absolute().parent)
            self._fixed_set = True
        o = self.overrides
        self._cli_select = None if o.select is None else _selectors(o.select, "--select")
        self._cli_extend = _selectors(o.extend_select, "--extend-select")
        self._cli_ignore = _selectors(o.ignore, "--ignore")
        if o.fail_on is not None and o.fail_on not in FAIL_ON:
            raise ConfigError(f"--fail-on: must be one of {', '.join(FAIL_ON)} (got {o.fail_on!r})")
        if o.ctas_per_sm is not None and o.ctas_per_sm < 1:
            raise ConfigError(f"--ctas-per-sm: must be an integer >= 1 (got {o.ctas_per_sm})")

    def use(self, config: Config | None) -> None:
        """Use ``config`` for every file, as ``--config`` does, without reading a file (the Python API's
        ``config=`` mapping); None uses none."""
        self._fixed = config
        self._fixed_set = True
        self.isolated = False

    def config_for(self, path: str | os.PathLike) -> Config | None:
        """The configuration that applies to ``path`` (a file that need not exist), or None."""
        if self.isolated:
            return None
        if self._fixed_set:
            return self._fixed
        found = find_config(os.path.dirname(os.path.abspath(path)))
        if found is None:
            return None
        if found not in self._loaded:
            self._loaded[found] = load_config(found)
        return self._loaded[found]

    def exclude_patterns(self, path: str | os.PathLike) -> list[tuple[str, str]]:
        """``(glob, root)`` pairs that exclude files near ``path``: ``--exclude`` (relative to the current folder),
        else the configuration's ``exclude``, else ``DEFAULT_EXCLUDE``; plus the configuration's and the command
        line's ``extend-exclude``."""
        cfg = self.config_for(path)
        o = self.overrides
        cwd = os.getcwd()
        if o.exclude is not None:
            out = [(g, cwd) for g in o.exclude]
        elif cfg is not None and cfg.exclude is not None:
            out = [(g, str(cfg.root)) for g in cfg.exclude]
        else:
            out = [(g, cwd) for g in DEFAULT_EXCLUDE]
        if cfg is not None:
            out += [(g, str(cfg.root)) for g in cfg.extend_exclude]
        out += [(g, cwd) for g in o.extend_exclude]
        return out

    def excluded(self, path: str | os.PathLike) -> bool:
        """Whether a file or folder found by a folder search or a glob is excluded (``exclude_patterns``)."""
        return any(glob_match(g, path, root) for g, root in self.exclude_patterns(path))

    def force_exclude(self, path: str | os.PathLike) -> bool:
        """Whether exclusions apply to ``path`` although it was named on the command line (``--force-exclude`` or
        ``force-exclude = true``, for pre-commit, which names every staged file)."""
        if self.overrides.force_exclude is not None:
            return self.overrides.force_exclude
        cfg = self.config_for(path)
        return bool(cfg is not None and cfg.force_exclude)

    def respect_gitignore(self, path: str | os.PathLike) -> bool:
        """Whether folder searches skip what ``.gitignore`` / ``.ignore`` files ignore (default: yes)."""
        if self.overrides.respect_gitignore is not None:
            return self.overrides.respect_gitignore
        cfg = self.config_for(path)
        return cfg is None or cfg.respect_gitignore is not False

    def options_for(self, path: str | os.PathLike) -> Options:
        """The engine options for ``path``: enabled codes (config selection, overridden by the command line,
        minus per-file ignores), severity overrides, ``fail_on`` and ``ctas_per_sm``."""
        cfg = self.config_for(path)
        o = self.overrides
        defaults = frozenset(c for c, r in RULES.items() if r.enabled)
        codes: frozenset[str] | None = None
        if cfg is not None and (cfg.select is not None or cfg.extend_select or cfg.ignore):
            codes = ((defaults if cfg.select is None else cfg.select) | cfg.extend_select) - cfg.ignore
        if self._cli_select is not None:
            codes = self._cli_select
        if self._cli_extend or self._cli_ignore:
            codes = ((defaults if codes is None else codes) | self._cli_extend) - self._cli_ignore
        if cfg is not None:
            ignored = set()
            for g, cs in cfg.per_file_ignores:
                if glob_match(g, path, cfg.root):
                    ignored |= cs
            if ignored:
                codes = (defaults if codes is None else codes) - ignored
        fail_on = o.fail_on or (cfg.fail_on if cfg else None) or "error"
        ctas = o.ctas_per_sm if o.ctas_per_sm is not None else (cfg.ctas_per_sm if cfg else None)
        return Options(None if codes is None else set(codes), severity=dict(cfg.severity) if cfg else {},
                       fail_on=fail_on, ctas_per_sm=ctas, include_dirs=cfg.include_dirs if cfg else (),
                       defines=dict(cfg.defines) if cfg else {},
                       library_paths=tuple((str(cfg.root), g) for g in cfg.library_paths) if cfg else ())


def split_selectors(values: Iterable[str] | None) -> list[str]:
    """Flatten repeated/comma-separated command-line selectors: ``["TM1,TM301", "x"]`` → ``["TM1", "TM301", "x"]``."""
    out: list[str] = []
    for v in values or ():
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out

