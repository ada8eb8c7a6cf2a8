"""The editor's own settings for tmemlint: ``initializationOptions`` and the ``tmemlint`` section of
``workspace/configuration``, applied on top of the options the configuration file gives each document.

Keys (each also in camelCase, as editors' settings are usually spelled)::

    {"defines": ["USE_TMEM", "STAGES=4"],      # or {"STAGES": 4}: -D for the #if of CUDA sources
     "include-dirs": ["include"],              # quoted #include folders, relative to the workspace root
     "ctas-per-sm": 2}                         # CTAs resident per SM, for the column budget

``defines`` are added to the configuration file's (the editor's value wins for one name), ``include-dirs`` are
searched after the file's, ``ctas-per-sm`` replaces the file's.  Unknown keys are ignored (an editor may send
settings of other tools in the same object)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from tmemlint.config import ConfigError, parse_defines
from tmemlint.options import Options

_SPELLINGS = {"defines": "defines", "include-dirs": "include-dirs", "includeDirs": "include-dirs",
              "include_dirs": "include-dirs", "ctas-per-sm": "ctas-per-sm", "ctasPerSm": "ctas-per-sm",
              "ctas_per_sm": "ctas-per-sm"}


@dataclass(frozen=True, slots=True)
class ClientSettings:
    """The editor's settings, validated: ``defines`` (name, value) pairs, absolute ``include_dirs``,
    ``ctas_per_sm`` (None: the file's)."""

    defines: tuple[tuple[str, str], ...] = ()
    include_dirs: tuple[str, ...] = ()
    ctas_per_sm: int | None = None

    def apply(self, options: Options) -> Options:
        """``options`` (one document's, from its configuration file) with these settings on top; modifies and
        returns ``options``."""
        if self.defines:
            options.defines = {**options.defines, **dict(self.defines)}
        if self.include_dirs:
            options.include_dirs = tuple(options.include_dirs) + self.include_dirs
        if self.ctas_per_sm is not None:
            options.ctas_per_sm = self.ctas_per_sm
        return options


def normalize(value: Any) -> Any:
    """The settings object ``value`` with the keys spelled as in the configuration file (``include-dirs``) and
    unwrapped from ``{"tmemlint": {...}}``; other values unchanged (``parse_client_settings`` rejects them)."""
    if isinstance(value, dict):
        if isinstance(value.get("tmemlint"), dict):
            value = value["tmemlint"]
        return {_SPELLINGS.get(k, k): v for k, v in value.items()}
    return value


def parse_client_settings(value: Any, root: str | None) -> ClientSettings:
    """The settings in ``value``: an object with the keys above, or one that holds them under ``"tmemlint"``
    (``initializationOptions`` of a client that sends every tool's settings); None or an empty object: none.
    Relative ``include-dirs`` are relative to ``root`` (the workspace folder; the current folder without one).
    Raises ConfigError naming the key."""
    if value is None:
        return ClientSettings()
    if not isinstance(value, dict):
        raise ConfigError(f"editor settings: expected an object (got {value!r})")
    table = {k: v for k, v in normalize(value).items() if k in _SPELLINGS.values()}
    kw: dict[str, Any] = {}
    if table.get("defines") is not None:
        kw["defines"] = parse_defines(table["defines"], "editor settings: defines")
    dirs = table.get("include-dirs")
    if dirs is not None:
        if not isinstance(dirs, list) or not all(isinstance(d, str) and d for d in dirs):
            raise ConfigError(f"editor settings: include-dirs: must be a list of folder names (got {dirs!r})")
        base = root or os.getcwd()
        kw["include_dirs"] = tuple(os.path.normpath(os.path.join(base, d)) for d in dirs)
    n = table.get("ctas-per-sm")
    if n is not None:
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ConfigError(f"editor settings: ctas-per-sm: must be an integer >= 1 (got {n!r})")
        kw["ctas_per_sm"] = n
    return ClientSettings(**kw)
