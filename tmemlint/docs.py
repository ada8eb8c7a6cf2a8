"""Rule documentation pages (``rules/<CODE>-<name>.md``), shipped inside the wheel as ``tmemlint/rules``."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from tmemlint.checks.registry import RULES, load_all


def rules_dir() -> Path | None:
    """Folder of the rule pages: inside the installed package, else ``rules/`` of the source tree."""
    try:
        res = resources.files("tmemlint").joinpath("rules")
        if res.is_dir():
            return Path(str(res))
    except (FileNotFoundError, ModuleNotFoundError):  # pragma: no cover
        pass
    here = Path(__file__).resolve().parents[1] / "rules"
    return here if here.is_dir() else None


def rule_doc_path(code: str) -> Path | None:
    load_all()
    d = rules_dir()
    r = RULES.get(code)
    if d is None or r is None:
        return None
    p = d / f"{r.code}-{r.name}.md"
    return p if p.is_file() else None


def rule_doc(code: str) -> str | None:
    """The Markdown page of rule ``code``, or None when it has none."""
    p = rule_doc_path(code)
    return p.read_text(encoding="utf-8") if p else None
