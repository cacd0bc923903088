"""The house's floors: every import in the package runs downwards, and one module decides verdicts.

evidence (what was read) <- job (the one model and its verdict) <- explain (tensor names, over the model) <-
renderers and the benchmark <- the CLI; the shared base (rank ranges, fabric arithmetic, settings, consoles, the cache folder) sits
under them all, findings beside evidence. A live node's collectors (snapshot/) and the host probe (probe/) read the
world like evidence does and decide nothing. Read from the source, so an import that runs back up a floor fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ncclcheck"
LAYOUT = PACKAGE.parent / "docs" / "layout.md"
FLOOR = {"ncclcheck": 0, "ranks": 0, "transfer": 0, "frsettings": 0, "console": 0, "cachedir": 0, "startcache": 0, "signals": 0, "schemas": 0,
         "evidence": 1, "findings": 1, "probe": 2, "snapshot": 2, "job": 3, "explain": 4,
         "render": 5, "bench": 5, "cli": 6, "__main__": 6}


def _part(module: str) -> str:
    parts = module.split(".")
    if parts[-1] == "__main__":  # an entry point (python -m ncclcheck, python -m ncclcheck.bench) sits on top
        return "__main__"
    return parts[1] if len(parts) > 1 else parts[0]


def _imports() -> list[tuple[str, str, int]]:
    out = []
    for f in PACKAGE.rglob("*.py"):
        name = ".".join(f.relative_to(PACKAGE.parent).with_suffix("").parts)
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ncclcheck"):
                targets = [node.module]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("ncclcheck")]
            else:
                continue
            out += [(name, t, node.lineno) for t in targets]
    return out


def test_every_import_runs_downwards():
    up = [f"{a}:{line} imports {b}" for a, b, line in _imports() if FLOOR[_part(b)] > FLOOR[_part(a)]]
    assert up == []


def test_every_part_has_a_floor():
    assert {_part(a) for a, _, _ in _imports()} | {_part(b) for _, b, _ in _imports()} <= set(FLOOR)


def test_no_core_module_reads_the_job_model_upside_down():
    """evidence/ reads the world and knows nothing of the job model; job/ knows nothing of how it is shown."""
    wrong = [(a, b) for a, b, _ in _imports()
             if (_part(a) == "evidence" and _part(b) in ("job", "render", "snapshot", "cli"))
             or (_part(a) == "job" and _part(b) in ("render", "cli", "snapshot", "explain"))]
    assert wrong == []


def test_one_module_decides_verdicts():
    """A Verdict is built in ncclcheck/job/verdict.py alone: snapshot, analyze-log and the HTML report show it."""
    builders = []
    for f in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Verdict":
                builders.append(str(f.relative_to(PACKAGE)))
    assert sorted(set(builders)) == ["job/verdict.py"]
    assert not (PACKAGE / "snapshot" / "verdict.py").exists()


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports() -> dict[str, set[str]]:
    """Each module's imports of the package's modules at run time: an import under ``if TYPE_CHECKING:`` names a type
    only, and ``from ncclcheck.job import nodeloss`` imports the module ``nodeloss``, not only its package."""
    modules = {_module(f): f for f in PACKAGE.rglob("*.py")}

    def resolve(name: str) -> str:
        while name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                       and "TYPE_CHECKING" in ast.unparse(block.test) for stmt in block.body for n in ast.walk(stmt)}
        targets: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ncclcheck"):
                targets |= {resolve(f"{node.module}.{a.name}") for a in node.names}
            elif isinstance(node, ast.Import):
                targets |= {resolve(a.name) for a in node.names if a.name.startswith("ncclcheck")}
        graph[name] = {t for t in targets if t != name and not name.startswith(t + ".")}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = stack[stack.index(v):]
            del stack[stack.index(v):]
            if len(part) > 1:
                found.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle():
    """No two modules import each other, directly or round a loop, at run time (issue 40: no cycle)."""
    assert _cycles(_runtime_imports()) == []


def test_cycle_finder_finds_a_loop():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_long_modules_say_why_in_layout():
    """A module of evidence/ or job/ over 500 lines is named in docs/layout.md's "Modules over 500 lines" with why."""
    section = LAYOUT.read_text().partition("## Modules over 500 lines")[2].partition("\n## ")[0]
    named = set(re.findall(r"^\* `([\w/]+\.py)`", section, re.M))
    long = {f.relative_to(PACKAGE).as_posix() for part in ("evidence", "job") for f in (PACKAGE / part).rglob("*.py")
            if len(f.read_text().splitlines()) > 500}
    assert long <= named, sorted(long - named)


# The names under which job/ holds an event's words: a regular expression over one re-reads a line a source read.
_WORDS = {"text", "message", "line", "detail"}
_RE_CALLS = {"search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split"}


def _regex_over_words(source: str) -> list[int]:
    """The lines of ``source`` that run a regular expression (a pattern's method or ``re``'s function) over an
    attribute or a name that holds an event's words."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _RE_CALLS):
            continue
        on_re = isinstance(node.func.value, ast.Name) and node.func.value.id == "re"
        subject = node.args[1:] if on_re else node.args[:1]  # re.search(pattern, text); pattern.search(text)
        if any(isinstance(a, ast.Attribute) and a.attr in _WORDS or isinstance(a, ast.Name) and a.id in _WORDS
               for a in subject):
            out.append(node.lineno)
    return out


_STR_TESTS = {"startswith", "endswith", "find", "rfind", "index", "count"}


def _words(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr in _WORDS or isinstance(node, ast.Name) and node.id in _WORDS


def _substring_over_words(source: str) -> list[int]:
    """The lines of ``source`` that test an attribute or a name that holds an event's words for a substring (``x in
    e.message``, ``e.text.startswith(x)``): a plain word test re-reads a line as a regular expression would."""
    def tests_words(node: ast.AST) -> bool:
        if isinstance(node, ast.Compare):
            return any(isinstance(op, (ast.In, ast.NotIn)) and _words(right)
                       for op, right in zip(node.ops, node.comparators, strict=True))
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _STR_TESTS \
            and _words(node.func.value)

    return sorted({node.lineno for node in ast.walk(ast.parse(source)) if tests_words(node)})


def test_the_scan_finds_a_substring_test_of_an_events_words():
    assert _substring_over_words("'x' in c.text\nif y not in e.message: pass\ne.detail.startswith('a')\ntext.find('b')"
                                 ) == [1, 2, 3, 4]
    assert _substring_over_words("'x' in c.kind\ne.loc.file.startswith('a')\nw in words\ne.signal == 'SIGABRT'") == []


def test_job_tests_no_events_words_unlisted():
    """A module of job/ that tests an event's words for a substring is named in docs/layout.md's section with why,
    and every module named there still does: a plain word test over a line's text is as hidden a re-reading as a
    regular expression."""
    section = LAYOUT.read_text().partition("## Words tested in an event's text in job/")[2].partition("\n## ")[0]
    named = {m for line in section.splitlines() if line.startswith("* ")
             for m in re.findall(r"`(job/\w+\.py)`", line.partition(": ")[0])}
    found = {f"job/{f.name}": lines for f in sorted((PACKAGE / "job").glob("*.py"))
             if (lines := _substring_over_words(f.read_text()))}
    assert set(found) <= named, {k: v for k, v in found.items() if k not in named}
    assert named <= set(found), sorted(named - set(found))


def test_the_scan_finds_a_regex_over_an_events_words():
    assert _regex_over_words("WAIT.search(e.message)\nm = re.sub(r'x', 'y', d.cause.text)\nP.findall(text)") == [1, 2, 3]
    assert _regex_over_words("P.search(e.loc.file)\n'x' in c.text\nre.compile(text)\ns.split()") == []


def test_job_matches_on_fields_not_on_an_events_words():
    """A module of job/ that runs a regular expression over an event's words (re-reading a line a source of
    evidence/formats/ read) is named in docs/layout.md's section with why, and every module named there still does."""
    section = LAYOUT.read_text().partition("## Regular expressions over an event's words in job/")[2].partition("\n## ")[0]
    named = {m for line in section.splitlines() if line.startswith("* ")
             for m in re.findall(r"`(job/\w+\.py)`", line.partition(": ")[0])}  # each item's modules, before its why
    found = {f"job/{f.name}": lines for f in sorted((PACKAGE / "job").glob("*.py"))
             if (lines := _regex_over_words(f.read_text()))}
    assert set(found) <= named, {k: v for k, v in found.items() if k not in named}
    assert named <= set(found), sorted(named - set(found))


def _unnamed_groups(source: str) -> list[int]:
    """The lines of ``source`` that compile a literal pattern with a group it does not name: a group read by its
    number (``m[1]``) silently reads another field when a group is added before it."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "compile"
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "re" and node.args):
            continue
        try:
            text = ast.literal_eval(node.args[0])
        except ValueError:
            continue  # a pattern joined at run time (the catalogue's, a registry's): its parts are checked where written
        if isinstance(text, str) and (p := re.compile(text)).groups != len(p.groupindex):
            out.append(node.lineno)
    return out


def test_the_scan_finds_an_unnamed_group():
    assert _unnamed_groups('A = re.compile(r"x (\\d+)")\nB = re.compile(r"(?P<n>\\d+)(?:y)")\nC = re.compile(P)') == [1]


def test_evidence_and_job_patterns_name_their_groups():
    """Every literal pattern of evidence/ and job/ names each group it captures, and is read by that name."""
    found = {f.relative_to(PACKAGE).as_posix(): lines for part in ("evidence", "job")
             for f in sorted((PACKAGE / part).rglob("*.py")) if (lines := _unnamed_groups(f.read_text()))}
    assert found == {}
