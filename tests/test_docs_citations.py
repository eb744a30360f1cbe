"""The documentation stays where the code says it is: every citation of a page resolves, and
docs/architecture.md lists every module and the layering rules as they are
(docs/architecture.md, "How code cites the documentation").

Comments and docstrings point a reader at `docs/<page>.md, "Section"` (or
`docs/<page>.md#anchor`, or `README.md, "Section"`); the pages' own links do the same with
`[page.md](page.md), "Section"` and `see "Section" below`. A page renamed or a section
retitled leaves those pointers dangling without any other test noticing, so this one reads
them all and names each dangling one by file and line.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tests.test_layering import FORBIDDEN, PACKAGES

ROOT = Path(__file__).resolve().parent.parent
THIS_FILE = Path(__file__).resolve()
ARCHITECTURE = ROOT / "docs" / "architecture.md"
CODE_FOLDERS = ("baton", "tests", "bench", "tools")

# A page: `docs/<page>.md` or README (`README` alone only when a section follows), or a
# Markdown link to a `.md` file; then an optional `#anchor`; then optional quoted sections,
# joined by commas, "and" or "or".
_QUOTE = r'"[^"]{1,80}"'
_SECTIONS = rf"(?P<sections>(?:,\s*|\s+){_QUOTE}(?:(?:\s*,\s*|\s+and\s+|\s+or\s+){_QUOTE})*)?"
CITATION = re.compile(
    r"(?:\[[^\]\n]*\]\((?P<link>[^)\s#]+\.md)(?P<link_anchor>#[\w-]+)?\)"
    r"|(?<![\w/.-])(?P<page>docs/[\w-]+\.md|README\.md|README(?=,\s*\"))(?P<anchor>#[\w-]+)?)"
    + _SECTIONS
)
QUOTED = re.compile(r'"([^"]+)"')
SELF_REFERENCE = re.compile(r'\bsee\s+"(?P<section>[^"]+)"\s+(?:below|above)')
# Documents that are not in the repository: a citation of them can never be followed.
ABSENT_DOCUMENT = re.compile(
    r"\bDESIGN(?:\.md)?\s*§|\bCONVENTIONS\b|\b[Ss]eeds?(?:[ -]0\d\d\b|'s\b|'(?!\w))"
)


@dataclass(frozen=True)
class Text:
    """A stretch of prose: a comment block, a docstring or other string, or a whole file."""

    path: Path
    line: int
    text: str
    prose: bool  # a comment, docstring or document (not a string the program uses)

    def where(self, offset: int) -> str:
        line = self.line + self.text.count("\n", 0, offset)
        return f"{self.path.relative_to(ROOT)}:{line}"


def _comment_blocks(source: str, path: Path) -> Iterator[Text]:
    """Consecutive comment lines as one text, so that a citation may wrap."""
    lines: list[str] = []
    start = last = 0
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        row = token.start[0]
        if lines and row != last + 1:
            yield Text(path, start, "\n".join(lines), prose=True)
            lines = []
        if not lines:
            start = row
        lines.append(token.string.lstrip("#").strip())
        last = row
    if lines:
        yield Text(path, start, "\n".join(lines), prose=True)


def _docstrings(tree: ast.Module) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def python_texts(path: Path) -> Iterator[Text]:
    """A module's comments, docstrings and other strings (an error message may cite too)."""
    source = path.read_text(encoding="utf-8")
    yield from _comment_blocks(source, path)
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield Text(path, node.lineno, node.value, prose=id(node) in docstrings)


@cache
def texts() -> tuple[Text, ...]:
    """Everything that may cite a document, but this file, whose examples dangle on purpose."""
    found = [
        text
        for folder in CODE_FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path.resolve() != THIS_FILE
        for text in python_texts(path)
    ]
    found += [
        Text(path, 1, path.read_text(encoding="utf-8"), prose=True)
        for path in (
            ROOT / "pyproject.toml",
            ROOT / "README.md",
            *sorted((ROOT / "docs").glob("*.md")),
            *sorted(p for p in (ROOT / "scripts").iterdir() if p.is_file()),
        )
    ]
    return tuple(found)


@cache
def headings(page: Path) -> tuple[str, ...]:
    """A Markdown page's headings, without their `#`s; lines inside code fences are not."""
    found: list[str] = []
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := re.match(r"#{1,6}\s+(.+?)\s*#*\s*$", line)):
            found.append(match.group(1))
    return tuple(found)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def is_heading(section: str, page: Path) -> bool:
    """Case-sensitive; backticks may be left out of a citation, but nothing else may."""
    return any(section in (heading, heading.replace("`", "")) for heading in headings(page))


def section_name(quoted: str) -> str:
    """A quoted section as one line: a wrapped citation (in a comment, or in a TOML template's
    comments) joins its lines."""
    return " ".join(re.sub(r"\n\s*#*", " ", quoted).split())


def resolve(text: Text, match: re.Match[str]) -> Path:
    if match["link"]:
        return (text.path.parent / match["link"]).resolve()
    page = match["page"]
    return ROOT / ("README.md" if page == "README" else page)


def citations() -> Iterator[tuple[str, Path, str | None, list[str]]]:
    """Each citation as (where, page, anchor, sections)."""
    for text in texts():
        for match in CITATION.finditer(text.text):
            sections = [section_name(q) for q in QUOTED.findall(match["sections"] or "")]
            anchor = match["link_anchor"] or match["anchor"]
            yield text.where(match.start()), resolve(text, match), anchor, sections
        if text.path.suffix == ".md":
            for match in SELF_REFERENCE.finditer(text.text):
                yield text.where(match.start()), text.path, None, [section_name(match[1])]
            for match in re.finditer(r"\]\((#[\w-]+)\)", text.text):
                yield text.where(match.start()), text.path, match[1], []


def test_every_cited_page_exists() -> None:
    """A citation names a page of the repository."""
    dangling = sorted(
        {
            f"{where}: {page.relative_to(ROOT)} does not exist"
            for where, page, _, _ in citations()
            if not page.is_file()
        }
    )
    assert [] == dangling, "\n".join(dangling)


def test_every_cited_section_is_a_heading_of_its_page() -> None:
    """A cited "Section" (or #anchor) is a heading of the page cited."""
    dangling: list[str] = []
    for where, page, anchor, sections in citations():
        if not page.is_file():
            continue
        name = page.relative_to(ROOT)
        dangling.extend(
            f'{where}: {name} has no heading "{section}"'
            for section in sections
            if not is_heading(section, page)
        )
        if anchor and anchor[1:] not in {slug(heading) for heading in headings(page)}:
            dangling.append(f"{where}: {name} has no heading whose anchor is {anchor}")
    dangling = sorted(set(dangling))
    assert [] == dangling, "\n".join(dangling)


def test_no_comment_cites_a_document_outside_the_repository() -> None:
    """Comments and docstrings cite docs/ and README.md, never a design note or seed that a
    reader of the repository cannot open."""
    cited = sorted(
        f"{text.where(match.start())}: {match.group(0).strip()!r}"
        for text in texts()
        if text.prose
        for match in ABSENT_DOCUMENT.finditer(text.text)
    )
    assert [] == cited, "\n".join(cited)


def architecture_section(heading: str) -> str:
    """The text of one `## ` section of docs/architecture.md, its subsections included."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    start = text.find(f"\n## {heading}\n")
    if start == -1:
        return ""
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def test_architecture_lists_every_module_in_its_package_section() -> None:
    """Each module of a package is named in that package's section, each shared module in
    "Shared by every layer"."""
    sections = {package: architecture_section(f"{package}/") for package in PACKAGES}
    unlisted = [
        f'baton/{path.relative_to(ROOT / "baton")} is not in docs/architecture.md, "{package}/"'
        for package in PACKAGES
        for path in sorted((ROOT / "baton" / package).rglob("*.py"))
        if path.name != "__init__.py" and f"`{path.name}`" not in sections[package]
    ]
    shared = architecture_section("Shared by every layer")
    unlisted += [
        f'baton/{path.name} is not in docs/architecture.md, "Shared by every layer"'
        for path in sorted((ROOT / "baton").glob("*.py"))
        if f"`{path.name}`" not in shared
    ]
    assert [] == unlisted, "\n".join(unlisted)


def _table(section: str, header: str) -> dict[str, str]:
    """A two-or-more-column Markdown table of the section: first column (backticks and a
    trailing `/` stripped) to last column."""
    if header not in section:
        return {}
    rows = section.split(header, 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    cells = [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]
    return {row[0].strip("`").rstrip("/"): row[-1] for row in cells}


def _named(cell: str) -> set[str]:
    return {name.rstrip("/") for name in re.findall(r"`([\w/]+)`", cell)}


def test_architecture_states_the_layering_rules() -> None:
    """The "knows nothing of" table of "Layers" and the "may import" table of "Dependency
    direction" say what tests/test_layering.py enforces."""
    forbidden = {
        package: {m.removeprefix("baton.") for m in FORBIDDEN.get(package, ())}
        for package in PACKAGES
    }
    knows_nothing_of = {
        package: _named(cell)
        for package, cell in _table(
            architecture_section("Layers"), "| package | what it holds | knows nothing of |"
        ).items()
    }
    assert forbidden == knows_nothing_of
    may_import: dict[str, set[str]] = {}
    for package, cell in _table(
        architecture_section("Dependency direction"), "| package | may import |"
    ).items():
        others = set(PACKAGES) - {package}
        if cell == "anything":
            may_import[package] = others
        elif cell.startswith("every package but"):
            may_import[package] = others - _named(cell)
        else:
            may_import[package] = _named(cell)
    assert {p: set(PACKAGES) - {p} - forbidden[p] for p in PACKAGES} == may_import
