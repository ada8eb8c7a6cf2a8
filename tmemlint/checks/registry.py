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
    #: what the rule is about (``TAGS``), for the consumers that select rules by kind (the plan, the server)
    tags: frozenset[str] = frozenset()


#: The tags of a rule's family (the hundreds of its code, ``../shared/docs/rules-catalog.md``): allocation
#: lifecycle, access through TMEM addresses, ordering of asynchronous tcgen05 operations, regions of an
#: allocation, and the input itself (reported by the driver and the front ends).
FAMILY_TAGS = {"TM1": "allocation", "TM2": "access", "TM3": "ordering", "TM4": "regions", "TM9": "input"}
#: Tags beyond the family's, by rule (``rule(..., tags=...)`` adds to these):
#:
#: * ``registers``: the finding is about registers, not TMEM cells (the plan attaches it to no region);
#: * ``plan-edge``: the order of a read and a later write of the same cells (the plan attaches it to the reuse edge
#:   between them);
#: * ``unnecessary``: the finding marks text that can be deleted (the server shows it faded).
TAGS: dict[str, frozenset[str]] = {
    "TM301": frozenset({"registers"}),
    **{c: frozenset({"plan-edge"}) for c in ("TM302", "TM303", "TM304", "TM306", "TM307", "TM308", "TM313")},
    "TM902": frozenset({"unnecessary"}),
}


def tags_of(code: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The tags of rule ``code``: its family's, ``TAGS``'s and ``extra``."""
    fam = FAMILY_TAGS.get(code[:3])
    return frozenset(extra) | TAGS.get(code, frozenset()) | ({fam} if fam else set())


RULES: dict[str, Rule] = {}
_BY_NAME: dict[str, str] = {}


def rule(code: str, name: str, severity: str, summary: str, enabled: bool = True, tags: Iterable[str] = ()):
    """Decorator registering a check function as rule ``code``/``name`` (with ``tags`` beyond ``tags_of``'s).

    Raises ValueError when the code or the name is registered twice."""

    def deco(fn: Callable | None):
        if code in RULES or name in _BY_NAME:
            raise ValueError(f"rule {code} {name} registered twice")
        RULES[code] = Rule(code, name, Severity(severity), summary, enabled, fn, tags_of(code, tags))
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


def codes_tagged(*tags: str) -> frozenset[str]:
    """The codes of the rules that carry one of ``tags``."""
    load_all()
    return frozenset(c for c, r in RULES.items() if r.tags & set(tags))


def enabled_rules(select: Iterable[str] | None = None) -> list[Rule]:
    load_all()
    if select is None:
        return [r for r in RULES.values() if r.enabled]
    return [RULES[c] for c in select if c in RULES]
