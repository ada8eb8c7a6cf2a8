"""The rule registry: every rule has a code, a kebab-case name, a default severity and a one-line summary
(``../shared/docs/rules-catalog.md``).  Checks register themselves with ``@rule``; modules of this package are
imported by ``load_all`` so that adding a module adds its rules."""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable, Iterable

from tmemlint.findings import Severity


@dataclass(frozen=True, slots=True)
class Rule:
    """A registered rule.  ``check`` takes a ``FunctionContext`` and yields ``Report`` objects; it is None for
    rules reported by the driver itself (TM900, TM901, TM902)."""

    code: str
    name: str
    severity: Severity
    summary: str
    enabled: bool
    check: Callable | None


RULES: dict[str, Rule] = {}
_BY_NAME: dict[str, str] = {}


def rule(code: str, name: str, severity: str, summary: str, enabled: bool = True):
    """Decorator registering a check function as rule ``code``/``name``.

    Raises ValueError when the code or the name is registered twice."""

    def deco(fn: Callable | None):
        if code in RULES or name in _BY_NAME:
            raise ValueError(f"rule {code} {name} registered twice")
        RULES[code] = Rule(code, name, Severity(severity), summary, enabled, fn)
        _BY_NAME[name] = code
        return fn

    return deco


def resolve(code_or_name: str) -> str | None:
    """The code for a rule code or name (``TM101`` or ``tmem-leak``), or None when unknown."""
    load_all()
    c = code_or_name.strip()
    if c.upper() in RULES:
        return c.upper()
    return _BY_NAME.get(c.lower())


def resolve_prefix(selector: str) -> list[str]:
    """Codes matched by a selector: a code, a name, a code prefix (``TM1``), or ``ALL``."""
    load_all()
    s = selector.strip()
    if s.upper() == "ALL":
        return sorted(RULES)
    one = resolve(s)
    if one:
        return [one]
    return sorted(c for c in RULES if c.startswith(s.upper())) if s.upper().startswith("TM") else []


_loaded = False


def load_all() -> dict[str, Rule]:
    """Import every module of ``tmemlint.checks`` (registering their rules); returns the registry."""
    global _loaded
    if not _loaded:
        _loaded = True
        import tmemlint.checks as pkg

        for info in pkgutil.iter_modules(pkg.__path__):
            if info.name not in ("registry", "context"):
                importlib.import_module(f"tmemlint.checks.{info.name}")
    return RULES


def enabled_rules(select: Iterable[str] | None = None) -> list[Rule]:
    load_all()
    if select is None:
        return [r for r in RULES.values() if r.enabled]
    return [RULES[c] for c in select if c in RULES]
