"""docs/architecture.md against the code: every grader module, file and function it names
exists, its list of the grader's own modules is whole, and its claims about the imports
hold (nothing below commands/ imports a command, no two modules share a file name, no
circle of imports of any length, no module over 450 lines and no function over 80), and no
code is kept alive only by its tests."""

from __future__ import annotations

import ast
import collections
import importlib
import re
import unittest
from pathlib import Path

from grader.paths import ROOT

DOC = ROOT / "docs" / "architecture.md"
GRADER = ROOT / "grader"


def _modules() -> dict[str, Path]:
    """Every module of the grader but its tests, by dotted name (grader.stages.lab)."""
    found = {}
    for path in sorted(GRADER.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.parts[1] == "tests":
            continue
        name = ".".join(rel.with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


MODULES = _modules()


def _resolve(dotted: str) -> str | None:
    """The grader module a doc's dotted prefix names: a full path below grader/
    ("stages.lab", "grader.stages.lab") or a module's own name ("_common", "scoring"),
    which is unique (the page says so, and a test below holds it to that)."""
    dotted = dotted.removeprefix("grader.")
    full = f"grader.{dotted}"
    if full in MODULES:
        return full
    named = [m for m in MODULES if m.rsplit(".", 1)[-1] == dotted]
    return named[0] if len(named) == 1 else None


def _names(text: str) -> list[str]:
    return re.findall(r"`([A-Za-z_][\w./]*)`", text)


class ArchitectureDocTest(unittest.TestCase):
    text = DOC.read_text(encoding="utf-8")

    def test_every_python_file_it_names_exists(self):
        missing = []
        for name in _names(self.text):
            if not name.endswith(".py"):
                continue
            candidates = [ROOT / name, GRADER / name]
            base = Path(name).name
            if "/" not in name:  # a bare file name: one of the grader's, or a tool
                candidates += list(GRADER.rglob(base)) + list((ROOT / "tools").glob(base))
            if not any(c.is_file() for c in candidates):
                if "/" not in name and not (ROOT / "solutions").is_dir():
                    continue  # a course tool a student copy of the grader leaves out
                missing.append(name)
        self.assertEqual(missing, [], "files docs/architecture.md names that do not exist")

    def test_every_function_and_record_it_names_exists(self):
        """`module.name` (a module by its path below grader/ or its own name, `/` or `.`
        between the parts): the module imports and has the name."""
        wrong = []
        for name in _names(self.text):
            if name.endswith((".py", ".md", ".toml", ".json", ".sh", ".yml", ".cu", ".cuh",
                              ".hpp", ".cpp", ".txt")):
                continue
            if name.endswith("/"):  # a folder
                continue
            dotted = name.replace("/", ".")
            parts = dotted.split(".")
            if len(parts) < 2:
                continue
            for cut in range(len(parts), 0, -1):  # the longest prefix that is a module
                module = _resolve(".".join(parts[:cut]))
                if module is not None:
                    break
            else:
                if parts[0] in ("stages", "measure", "commands", "exports", "batch",
                                "catch2", "course", "cluster", "static_checks"):
                    wrong.append(f"{name} (no such module)")
                continue
            obj = importlib.import_module(module)
            for attr in parts[cut:]:
                if not hasattr(obj, attr):
                    wrong.append(f"{name} ({module} has no {attr})")
                    break
                obj = getattr(obj, attr)
        self.maxDiff = None
        self.assertEqual(wrong, [], "names docs/architecture.md gives that the code lacks")

    def test_the_grader_row_lists_every_top_level_module(self):
        row = next(line for line in self.text.splitlines()
                   if line.startswith("| `grader/` |") and "one module each:" in line)
        listed = set(re.findall(r"`(\w+)`", row.split("one module each:", 1)[1]))
        actual = {m.split(".")[1] for m in MODULES
                  if m.count(".") == 1 and not m.endswith("__main__")
                  and MODULES[m].name != "__init__.py"}
        self.assertEqual(listed, actual)

    def test_no_two_modules_share_a_file_name(self):
        names = [p.name for p in MODULES.values() if p.name not in ("__init__.py",
                                                                       "__main__.py")]
        self.assertEqual(sorted(n for n in set(names) if names.count(n) > 1), [])

    def test_nothing_below_commands_imports_a_command(self):
        self.assertIn("Nothing below `commands/` imports a command", self.text)
        offenders = [f"{name} imports {target}" for name, target in _imports()
                     if ".commands" in target and not name.startswith("grader.commands")
                     and name != "grader.__main__"]
        self.assertEqual(offenders, [])

    def test_no_module_imports_one_that_imports_it_back(self):
        edges = {(a, b) for a, b in _imports()}
        circles = sorted(f"{a} <-> {b}" for a, b in edges if (b, a) in edges and a < b)
        self.assertEqual(circles, [])

    def test_no_circle_of_imports_of_any_length(self):
        # Tarjan's strongly connected components over the import graph: a component of more
        # than one module is a circle (a imports b imports c imports a).
        graph: dict[str, set[str]] = {name: set() for name in MODULES}
        for a, b in _imports():
            graph[a].add(b)
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        circles: list[list[str]] = []

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
                part = []
                while True:
                    w = stack.pop()
                    part.append(w)
                    if w == v:
                        break
                if len(part) > 1:
                    circles.append(sorted(part))

        for v in graph:
            if v not in index:
                visit(v)
        self.assertEqual(circles, [])

    def test_no_module_over_450_lines_and_no_function_over_80(self):
        self.assertIn("no module over 450 lines, no function over 80", self.text)
        big = [f"{path.relative_to(ROOT)}: {n} lines" for path in MODULES.values()
               if (n := len(path.read_text(encoding="utf-8").splitlines())) > 450]
        long = [f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: "
                f"{(node.end_lineno or node.lineno) - node.lineno + 1} lines"
                for path in MODULES.values()
                for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and (node.end_lineno or node.lineno) - node.lineno + 1 > 80]
        self.assertEqual(big + long, [])

    def test_no_code_is_kept_alive_only_by_its_tests(self):
        self.assertIn("No code is kept alive only by its tests", self.text)
        # What may name the grader's code: the grader but its tests, the tools, the
        # platforms' integrations.
        users = [*MODULES.values(), *sorted((ROOT / "tools").glob("*.py")),
                 *sorted((ROOT / "integrations").rglob("*.py"))]
        words = collections.Counter(word for p in users
                                    for word in re.findall(r"\w+", p.read_text(encoding="utf-8")))
        # named once in all of it: its definition alone
        unused = [f"{name}.{defined}" for name, path in MODULES.items()
                  for defined in _defined(path) if words[defined] <= 1]
        self.assertEqual(unused, [], "named nowhere but where it is defined (and the tests)")


def _defined(path: Path) -> list[str]:
    """The top-level functions, classes and names a module defines, and its classes'
    methods (dunders aside)."""
    names = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.append(node.name)
        elif isinstance(node, ast.ClassDef):
            names.append(node.name)
            names += [m.name for m in node.body
                      if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                      and not m.name.startswith("__")]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [t.id for t in targets if isinstance(t, ast.Name)]
    return names


def _imports() -> list[tuple[str, str]]:
    """(importer, imported grader module) for every import of the grader's modules, those
    inside functions included."""
    found = []
    for name, path in MODULES.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[:len(anchor) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{a.name}" for a in node.names] + [base]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                if target in MODULES and target != name:
                    found.append((name, target))
                    break
    return found


if __name__ == "__main__":
    unittest.main()
