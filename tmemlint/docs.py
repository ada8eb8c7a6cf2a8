"""Rule documentation pages (``rules/<CODE>-<name>.md``), shipped inside the wheel as ``tmemlint/rules``, their
web addresses, and the rule table of README.md generated from the registry.

``python -m tmemlint.docs --write-readme [README]`` rewrites the part of README.md between
``<!-- rules:start -->`` and ``<!-- rules:end -->`` and the rows of ``tmemlint/ruletable.py``; ``--check`` exits 1
when either is out of date."""

from __future__ import annotations

import argparse
import sys
from importlib import resources
from pathlib import Path

from tmemlint.version import __version__
from tmemlint.checks.registry import RULES, load_all

#: The project's repository (SARIF ``informationUri``, ``[project.urls]`` of pyproject.toml).  Rule pages are served
#: from it at the release tag of the installed version (``rule_url``), so a page matches the rules that ran; the
#: same pages ship inside the package (``tmemlint rule CODE``), for use without a network.
HOMEPAGE = "https://github.com/tmemlint/tmemlint"
README_START = "<!-- rules:start -->"
README_END = "<!-- rules:end -->"
RULETABLE_START = "# generated rows: begin\n"
RULETABLE_END = "# generated rows: end"


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
    """The page ``rules/<CODE>-<name>.md`` of rule ``code``, or None when the rule or its page does not exist."""
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


def rule_url(code: str) -> str:
    """The web address of rule ``code``'s page at this version's release tag
    (``HOMEPAGE/blob/v<version>/rules/<CODE>-<name>.md``).  Raises KeyError for an unknown code."""
    load_all()
    r = RULES[code]
    return f"{HOMEPAGE}/blob/v{__version__}/rules/{r.code}-{r.name}.md"


def rules_table() -> str:
    """The Markdown rule table of every registered rule (sorted by code): code, name, default severity ("off"
    for rules disabled by default), summary; ends with a newline."""
    load_all()
    rows = ["| code | name | default | summary |", "|---|---|---|---|"]
    for code in sorted(RULES):
        r = RULES[code]
        sev = r.severity.value + ("" if r.enabled else " (off)")
        rows.append(f"| {r.code} | `{r.name}` | {sev} | {r.summary.replace('|', chr(92) + '|')} |")
    return "\n".join(rows) + "\n"


def rule_rows() -> str:
    """``ROWS`` of ``tmemlint/ruletable.py`` (the rule table the commands that only print it read without importing
    the rules), generated from the registry: ``(code, name, severity, enabled, summary)`` sorted by code."""
    load_all()
    out = ["ROWS = ("]
    for code in sorted(RULES):
        r = RULES[code]
        out.append(f"    ({r.code!r}, {r.name!r}, {r.severity.value!r}, {r.enabled!r},")
        out.append(f"     {r.summary!r}),")
    return "\n".join(out + [")"]) + "\n"


def ruletable_with_rows(source: str) -> str:
    """``source`` (``tmemlint/ruletable.py``) with the text between its generated-rows markers replaced by
    ``rule_rows()``."""
    start, end = source.index(RULETABLE_START) + len(RULETABLE_START), source.index(RULETABLE_END)
    return source[:start] + rule_rows() + source[end:]


def readme_with_rules(readme: str) -> str:
    """``readme`` with the text between the rule-table markers replaced by ``rules_table()``; a README without
    the markers gets a ``## Rules`` section with them appended."""
    block = f"{README_START}\n{rules_table()}{README_END}"
    start, end = readme.find(README_START), readme.find(README_END)
    if start < 0 or end < start:
        return readme.rstrip("\n") + f"\n\n## Rules\n\n{block}\n"
    return readme[:start] + block + readme[end + len(README_END):]


def main(argv: list[str] | None = None) -> int:
    """``python -m tmemlint.docs``: ``--write-readme [PATH]`` regenerates the rule table of PATH (default: the
    README.md of the source tree, else of the current folder); ``--check`` exits 1 when it is out of date.
    Returns the exit code."""
    ap = argparse.ArgumentParser(prog="python -m tmemlint.docs", description=__doc__.splitlines()[0])
    ap.add_argument("readme", nargs="?", help="README to update (default: README.md)")
    ap.add_argument("--write-readme", action="store_true", help="rewrite the rule table between the markers")
    ap.add_argument("--check", action="store_true", help="exit 1 when the README's rule table is out of date")
    args = ap.parse_args(argv)
    path = Path(args.readme) if args.readme else Path(__file__).resolve().parents[1] / "README.md"
    if not args.readme and not path.is_file():
        path = Path("README.md")
    if not (args.write_readme or args.check):
        sys.stdout.write(rules_table())
        return 0
    try:
        old = path.read_text(encoding="utf-8")
    except OSError as e:
        print(f"tmemlint.docs: {path}: cannot read: {e.strerror or e}", file=sys.stderr)
        return 2
    new = readme_with_rules(old)
    table = Path(__file__).with_name("ruletable.py")
    old_rows = table.read_text(encoding="utf-8")
    new_rows = ruletable_with_rows(old_rows)
    if args.check:
        stale = [p for p, o, n in ((path, old, new), (table, old_rows, new_rows)) if o != n]
        for p in stale:
            print(f"{p}: rule table out of date; run python -m tmemlint.docs --write-readme", file=sys.stderr)
        return 1 if stale else 0
    for p, o, n in ((path, old, new), (table, old_rows, new_rows)):
        if n != o:
            p.write_text(n, encoding="utf-8")
            print(f"{p}: rule table updated", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
