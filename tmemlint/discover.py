"""Which files a ``check`` run reads: the command line's paths expanded as ruff expands them.

* A file named on the command line is checked (whatever its suffix: ``.ptx`` is PTX, ``.cu``/``.cuh``/headers
  are CUDA sources), unless ``force-exclude`` is on and an exclusion matches it (pre-commit names every staged
  file, excluded or not).
* A folder is searched recursively for ``*.ptx``, ``*.cu`` and ``*.cuh``, in sorted order, skipping

  - entries matched by the exclusions (``Settings.exclude_patterns``: ``exclude`` or its defaults -- ``.git``,
    ``.venv``, ``node_modules``, ``build`` ... -- plus ``extend-exclude``); a pattern without ``/`` is matched
    against each entry's name, one with ``/`` against its path relative to the pattern's folder;
  - entries ignored by ``.gitignore`` and ``.ignore`` files (git's pattern rules, through ``pathspec``): those in
    the searched folders, and those of the folders above up to the repository's top (the folder holding
    ``.git``), plus ``.git/info/exclude``; later and deeper files win, ``!pattern`` re-includes.  Off with
    ``respect-gitignore = false`` / ``--no-respect-gitignore``.

* An argument that names nothing but has glob characters (``*``, ``?``, ``[``; ``**`` crosses folders) is
  expanded, its files kept and its folders searched (the same skipping applies to what it matches).

Paths are returned as they will be shown: relative to the current folder when they lie under it, without
``./``, with ``/`` separators on POSIX (``display_path``).
"""

from __future__ import annotations

import fnmatch
import glob
import os
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable

from tmemlint.config import Settings, glob_match
from tmemlint.pathnames import display_path
from tmemlint.pipeline import SEARCHED_SUFFIXES  # the suffix table

IGNORE_FILES = (".gitignore", ".ignore")
_GLOB_CHARS = ("*", "?", "[")


@dataclass
class Discovery:
    """The outcome of ``discover``: ``files`` to check (display paths, in argument order, each once),
    ``missing`` arguments that name nothing, and ``empty`` folder or glob arguments in which nothing was found to
    check."""

    files: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    empty: list[str] = field(default_factory=list)


@lru_cache(maxsize=4096)
def _ignore_spec(folder: str):
    """The ``pathspec.GitIgnoreSpec`` of the ignore files in ``folder`` (None when it has none)."""
    lines: list[str] = []
    names = list(IGNORE_FILES)
    if os.path.isdir(os.path.join(folder, ".git")):
        names.insert(0, os.path.join(".git", "info", "exclude"))
    for name in names:
        try:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as fh:
                lines.extend(fh.read().splitlines())
        except OSError:
            continue
    lines = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        return None
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


def _repo_top(folder: str) -> str | None:
    d = folder
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


class _Ignores:
    """The ``.gitignore``/``.ignore`` files that apply below one searched folder."""

    def __init__(self, root: str):
        root = os.path.abspath(root)
        top = _repo_top(root)
        chain = []
        d = root
        while top is not None:
            chain.append(d)
            if d == top:
                break
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
        self.above = list(reversed(chain[1:]))  # the repository's top first
        self.root = root
        if self.above and self._decide(root, True, self.above):
            self.above = []  # an ignored folder named on the command line is searched (as ripgrep and ruff do)

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Whether ``path`` (absolute, below the searched folder) is ignored: the deepest decision wins."""
        folders = self.above + [self.root]
        rel_root = os.path.relpath(os.path.dirname(path), self.root)
        if rel_root != os.curdir:
            d = self.root
            for part in rel_root.split(os.sep):
                d = os.path.join(d, part)
                folders.append(d)
        return self._decide(path, is_dir, folders)

    @staticmethod
    def _decide(path: str, is_dir: bool, folders: list[str]) -> bool:
        for folder in reversed(folders):
            spec = _ignore_spec(folder)
            if spec is None:
                continue
            rel = os.path.relpath(path, folder).replace(os.sep, "/") + ("/" if is_dir else "")
            res = spec.check_file(rel)
            if res.include is not None:
                return res.include
        return False


def _entry_excluded(settings: Settings, path: str) -> bool:
    """Whether a folder entry found by a search is excluded: a pattern without ``/`` against its name, one with
    ``/`` against its path."""
    name = os.path.basename(path)
    for pattern, root in settings.exclude_patterns(path):
        pat = pattern.strip().rstrip("/")
        if pat.startswith("./"):
            pat = pat[2:]
        if "/" not in pat:
            if fnmatch.fnmatchcase(name, pat):
                return True
        elif glob_match(pat, path, root):
            return True
    return False


def _walk(folder: str, settings: Settings) -> list[str]:
    ignores = _Ignores(folder) if settings.respect_gitignore(os.path.join(folder, "x")) else None
    found = []
    for root, dirs, names in os.walk(folder):
        kept = []
        for d in sorted(dirs):
            full = os.path.join(root, d)
            if _entry_excluded(settings, full):
                continue
            if ignores is not None and ignores.ignored(os.path.abspath(full), True):
                continue
            kept.append(d)
        dirs[:] = kept
        for n in names:
            if not n.endswith(SEARCHED_SUFFIXES):
                continue
            full = os.path.join(root, n)
            if not os.path.isfile(full) or _entry_excluded(settings, full):
                continue
            if ignores is not None and ignores.ignored(os.path.abspath(full), False):
                continue
            found.append(full)
    return sorted(found)


def discover(paths: Iterable[str], settings: Settings) -> Discovery:
    """Expand the command line's ``paths`` (see the module docstring).  Raises ``ConfigError`` for a broken
    configuration file found on the way."""
    out = Discovery()
    files: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            got = _walk(p, settings)
            if not got:
                out.empty.append(p)
            files.extend(got)
        elif os.path.exists(p) or os.path.islink(p):
            if settings.force_exclude(p) and settings.excluded(p):
                continue
            files.append(p)
        elif any(c in p for c in _GLOB_CHARS) and (hits := sorted(glob.glob(p, recursive=True))):
            got = []
            for h in hits:
                if _entry_excluded(settings, h):
                    continue
                if os.path.isdir(h):
                    got.extend(_walk(h, settings))
                elif h.endswith(SEARCHED_SUFFIXES):
                    got.append(h)
            if not got:
                out.empty.append(p)
            files.extend(got)
        else:
            out.missing.append(p)
    out.files = list(dict.fromkeys(display_path(f) for f in files))
    return out
