"""A lab's rubric: labs/NN_topic/grading.toml read into dataclasses and checked.

The schema (every key, with lab 04's rubric as the example) is in grader/README.md.
`load_rubric` rejects what it does not know — a misspelt key would otherwise silently
change a grade — with a message that names the file and the problem.
"""

from __future__ import annotations

import math
import sys
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, overload

from .measure.floor import FLOOR_MARGIN
from .paths import LabPaths

# The TOML reader every part of the grader uses (`from .rubric import tomllib`): the standard
# library's on Python 3.11 and newer, on 3.10 the same parser packaged as `tomli` (Debian's
# and Ubuntu's python3-tomli).
TOML_MISSING = ("Python {v} has no TOML reader for the rubrics: install tomli (Debian or "
                "Ubuntu: `apt-get install python3-tomli`; elsewhere: `pip install tomli`) "
                "or run the grader with Python 3.11 or newer.")
if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    try:
        import tomli as tomllib
    except ModuleNotFoundError:
        raise ModuleNotFoundError(TOML_MISSING.format(
            v=".".join(map(str, sys.version_info[:2]))), name="tomli") from None


RUBRIC_FILE = "grading.toml"
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
METRIC_TARGETS = ("bench", "tests")
METRIC_CALLS = ("candidate", "baseline")


class RubricError(ValueError):
    """A grading.toml that cannot be used; the message names the file and the problem."""


@dataclass
class CorrectnessGroup:
    """Test cases matching the Catch2 spec `tests` share `points` evenly."""

    name: str
    tests: str
    points: float
    hint: str = ""
    bonus: bool = False  # points above the lab's maximum: not doing it costs nothing


@dataclass
class MemorySafety:
    """Cases matching `tests` run under each compute-sanitizer tool; a clean tool earns
    its share of `points`."""

    points: float
    tests: str
    tools: list[str]


@dataclass
class Performance:
    """The bench comparison `comparison`, scored against the reference (grader/README.md, "Scoring")."""

    points: float
    bench_args: list[str]
    comparison: str
    requires: list[str]
    full_credit_ratio: float = 1.2
    review_ratio: float = 10.0
    # a candidate time below the physical floor / floor_margin is flagged for review
    # (grader/measure/floor.py floor_check)
    floor_margin: float = FLOOR_MARGIN


@dataclass
class Stretch:
    """A speed part scored as a fraction of a yardstick timed in the same run: the bench
    comparison `comparison` interleaves the yardstick (baseline) with the student's call, so
    its median speedup is the fraction; scoring.fraction_points turns it into points (full
    at `target_fraction`, none at or below `floor_fraction`). Needs the groups in `requires`
    at full marks and, when `sanitizer_tests` is set, those cases clean under the
    [memory_safety] tools."""

    points: float
    comparison: str
    requires: list[str]
    target_fraction: float = 0.6
    floor_fraction: float = 0.0
    sanitizer_tests: str = ""
    bonus: bool = False
    floor_margin: float = FLOOR_MARGIN  # as [performance].floor_margin


@dataclass
class Metric:
    """A profiler (ncu) metric of the work one call did, read per kernel of the call (every
    kernel it launched, whatever their names) and judged by the worst kernel that carries at
    least a tenth of the call's work (grader/README.md, "Profiler metrics"); `max_kernels`
    caps the distinct kernels the call may launch.

    target "bench": the bench marks each call of an interleaved comparison with an NVTX
    range, `cml:candidate` around the student's call and `cml:baseline` around the given
    baseline's; `call` picks one (`args` pick the comparison). target "tests": every kernel
    the matching test cases launch."""

    name: str
    target: str = "bench"  # "bench": run the bench with `args`; "tests": args is a Catch2 spec
    args: list[str] = field(default_factory=list)
    metric: str = ""
    per: str | None = None  # denominator metric, measured on the same launches
    call: str = "candidate"  # bench only: "candidate" (the student's call) or "baseline"
    per_baseline: bool = False  # divide by the same value measured on the baseline's call
    expect_min: float | None = None
    expect_max: float | None = None
    points: float = 0.0
    requires: list[str] = field(default_factory=list)  # default: [performance].requires
    max_kernels: int | None = None  # more distinct kernels in the call: 0 points for it


@dataclass
class StaticRules:
    """The lab's additions to the static checks' shared allow-lists (grader/allowlist.toml):
    symbols its object may also reference and define (globs on demangled names, `{ns}` for
    the lab's namespace) and files it may also include (path globs from the repository
    root). Everything else not in the shared lists is refused (grader/static_checks/)."""

    allow_reference: list[str] = field(default_factory=list)
    allow_define: list[str] = field(default_factory=list)
    allow_include: list[str] = field(default_factory=list)
    # What the shared list allows but this lab's lesson forbids (e.g. the runtime's
    # occupancy queries in the lab that computes occupancy), and why, for the message.
    refuse_reference: list[str] = field(default_factory=list)
    refuse_why: str = ""

    # The deny-list keys are gone; these stay empty until grader/pipeline.py calls
    # static_checks.check_object / check_preprocessed instead of the old deny-list checks.
    @property
    def deny_symbols(self) -> list[str]:
        return []

    @property
    def allow_symbols(self) -> list[str]:
        return []

    @property
    def deny_source(self) -> list[str]:
        return []


@dataclass
class Rubric:
    lab: LabPaths
    title: str
    student_files: list[str]  # relative to the repository root
    test_timeout_s: float = 300.0
    build_timeout_s: float = 600.0
    correctness: list[CorrectnessGroup] = field(default_factory=list)
    memory_safety: MemorySafety | None = None
    performance: Performance | None = None
    metrics: list[Metric] = field(default_factory=list)
    static: StaticRules = field(default_factory=StaticRules)
    stretch: Stretch | None = None

    @property
    def bonus_points(self) -> float:
        """Points a lab offers above its maximum (parts marked bonus = true)."""
        total = sum(g.points for g in self.correctness if g.bonus)
        if self.stretch and self.stretch.bonus:
            total += self.stretch.points
        return total

    @property
    def max_points(self) -> float:
        """The lab's maximum; bonus parts are not in it."""
        total = sum(g.points for g in self.correctness if not g.bonus)
        total += self.stretch.points if self.stretch and not self.stretch.bonus else 0.0
        total += self.memory_safety.points if self.memory_safety else 0.0
        total += self.performance.points if self.performance else 0.0
        total += sum(m.points for m in self.metrics)
        return total

    @property
    def path(self) -> Path:
        return self.lab.lab_dir / RUBRIC_FILE

    def group(self, name: str) -> CorrectnessGroup:
        """The correctness group called `name`; KeyError when there is none."""
        for g in self.correctness:
            if g.name == name:
                return g
        raise KeyError(name)


# --- checking ------------------------------------------------------------------------------

class _Checker:
    """Typed access to one table of the document, collecting the keys it has read."""

    def __init__(self, file: str, where: str, table: Any) -> None:
        self.file = file
        self.where = where
        if not isinstance(table, dict):
            raise self.fail(f"{where} must be a table, not {_type_name(table)}")
        self.table = table

    def fail(self, problem: str) -> RubricError:
        return RubricError(f"{self.file}: {problem}")

    def _get(self, key: str, required: bool) -> Any:
        if key not in self.table:
            if required:
                raise self.fail(f"{self.where} is missing the required key '{key}'")
            return None
        return self.table[key]

    # A default that is a string gives a string; a default of None may give None.
    @overload
    def string(self, key: str, required: bool = ..., default: str = ...) -> str: ...
    @overload
    def string(self, key: str, required: bool = ..., *, default: None) -> str | None: ...

    def string(self, key: str, required: bool = True, default: str | None = "") -> str | None:
        value = self._get(key, required)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.fail(f"{self.where}.{key} must be a string, not {_type_name(value)}")
        return value

    # A default that is a number gives a number; a default of None may give None.
    @overload
    def number(self, key: str, required: bool = ..., default: float = ...,
               minimum: float | None = ..., above: float | None = ...) -> float: ...
    @overload
    def number(self, key: str, required: bool = ..., *, default: None,
               minimum: float | None = ..., above: float | None = ...) -> float | None: ...

    def number(self, key: str, required: bool = True, default: float | None = 0.0,
               minimum: float | None = None, above: float | None = None) -> float | None:
        value = self._get(key, required)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(f"{self.where}.{key} must be a number, not {_type_name(value)}")
        value = float(value)
        if not math.isfinite(value):
            raise self.fail(f"{self.where}.{key} must be a finite number, not {value}")
        if minimum is not None and value < minimum:
            raise self.fail(f"{self.where}.{key} must be at least {minimum:g}, not {value:g}")
        if above is not None and value <= above:
            raise self.fail(f"{self.where}.{key} must be greater than {above:g}, not {value:g}")
        return value

    def strings(self, key: str, required: bool = True) -> list[str]:
        value = self._get(key, required)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(f"{self.where}.{key} must be an array of strings, "
                            f"not {_type_name(value)}")
        return list(value)

    def only(self, allowed: tuple[str, ...]) -> None:
        for key in self.table:
            if key not in allowed:
                raise self.fail(f"unknown key '{key}' in {self.where} "
                                f"(known keys: {', '.join(allowed)})")


def _default(record: type, name: str) -> Any:
    """The default a rubric record declares for `name`: the one place each default lives
    (the parser below reads it from there)."""
    found = next(f for f in fields(record) if f.name == name)
    assert found.default is not MISSING, f"{record.__name__}.{name} declares no default"
    return found.default


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__


def _bonus(check: _Checker) -> bool:
    """The table's `bonus` flag (default false)."""
    value = check.table.get("bonus", False)
    if not isinstance(value, bool):
        raise check.fail(f"{check.where}.bonus must be true or false, not {_type_name(value)}")
    return value


def _student_files(lab: LabPaths, check: _Checker) -> list[str]:
    # Default: the one file the folder names, labs/NN_topic/topic.cu.
    if "student_files" not in check.table:
        return [f"labs/{lab.folder}/{lab.topic}.cu"]
    files = check.strings("student_files")
    if not files:
        raise check.fail("student_files must name at least one file")
    lab_dir = lab.lab_dir.resolve()
    out = []
    for name in files:
        path = Path(name)
        if path.is_absolute() or ".." in path.parts:
            raise check.fail(f"student file '{name}' must be a path relative to the repository "
                             f"root inside labs/{lab.folder}/")
        resolved = (lab.root / path).resolve()
        if resolved == lab_dir or lab_dir not in resolved.parents:
            raise check.fail(f"student file '{name}' is outside the lab folder labs/{lab.folder}/")
        if resolved.name == RUBRIC_FILE or "tests" in resolved.relative_to(lab_dir).parts[:-1]:
            raise check.fail(f"student file '{name}' may not be the rubric or a test file")
        if name in out:
            raise check.fail(f"student file '{name}' is listed twice")
        out.append(name)
    return out


def _in_lab(spec: str, lab: LabPaths) -> str:
    """`spec` limited to the lab's tests: a spec that names no [labNN] tag gets the lab's tag
    in front of each of its comma-separated alternatives ("[model]" -> "[lab04][model]")."""
    if "[lab" in spec.lower() or '"' in spec:
        return spec
    return ",".join(f"[{lab.tag}]{alt.strip()}" for alt in spec.split(","))


def _requires(check: _Checker, groups: list[CorrectnessGroup]) -> list[str]:
    names = {g.name for g in groups}
    required = check.strings("requires", required=False)
    for name in required:
        if name not in names:
            known = ", ".join(repr(n) for n in sorted(names)) or "none"
            raise check.fail(f"{check.where}.requires names '{name}', which is not a "
                             f"[[correctness]] group (groups: {known})")
    return required


def _tables(top: _Checker, key: str) -> list[_Checker]:
    """The tables of the array `[[key]]` (none when absent), each named by its position."""
    raw = top.table.get(key, [])
    if not isinstance(raw, list):
        raise top.fail(f"{key} must be an array of tables ([[{key}]])")
    return [_Checker(top.file, f"[[{key}]] #{i + 1}", table) for i, table in enumerate(raw)]


def parse_rubric(lab: LabPaths, text: str, file: str | None = None) -> Rubric:
    """A rubric from grading.toml text; `file` names it in error messages."""
    file = file or f"labs/{lab.folder}/{RUBRIC_FILE}"
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise RubricError(f"{file}: not valid TOML: {err}") from err

    top = _Checker(file, "the top level", doc)
    top.only(("student_files", "lab", "correctness", "memory_safety", "performance",
              "metrics", "static", "release", "stretch"))
    if "release" in doc:  # read by grader/course/releases.py: labs whose answers this lab's given code holds
        rel = _Checker(file, "[release]", doc["release"])
        rel.only(("contains_answers_of",))
        rel.strings("contains_answers_of", required=False)
    student_files = _student_files(lab, top)

    if "lab" not in doc:
        raise top.fail("the [lab] table (with its title) is missing")
    lab_t = _Checker(file, "[lab]", doc["lab"])
    lab_t.only(("title", "test_timeout_s", "build_timeout_s"))
    title = lab_t.string("title")
    if not title.strip():
        raise lab_t.fail("[lab].title must not be empty")
    test_timeout = lab_t.number("test_timeout_s", required=False,
                                default=_default(Rubric, "test_timeout_s"), above=0)
    build_timeout = lab_t.number("build_timeout_s", required=False,
                                 default=_default(Rubric, "build_timeout_s"), above=0)

    groups: list[CorrectnessGroup] = []
    for i, c in enumerate(_tables(top, "correctness")):
        c.only(("name", "tests", "points", "hint", "bonus"))
        name = c.string("name")
        c.where = f"[[correctness]] '{name}'"
        if not name.strip():
            raise c.fail(f"[[correctness]] #{i + 1} has an empty name")
        if any(g.name == name for g in groups):
            raise c.fail(f"two [[correctness]] groups are called '{name}'")
        tests = c.string("tests")
        if not tests.strip():
            raise c.fail(f"{c.where}.tests must not be empty")
        tests = _in_lab(tests, lab)
        groups.append(CorrectnessGroup(name, tests, c.number("points", minimum=0),
                                       c.string("hint", required=False), _bonus(c)))

    memory = None
    if "memory_safety" in doc:
        m = _Checker(file, "[memory_safety]", doc["memory_safety"])
        m.only(("points", "tests", "tools"))
        tools = m.strings("tools")
        if not tools:
            raise m.fail("[memory_safety].tools must name at least one tool")
        for tool in tools:
            if tool not in SANITIZER_TOOLS:
                raise m.fail(f"[memory_safety].tools: unknown compute-sanitizer tool '{tool}' "
                             f"(known: {', '.join(SANITIZER_TOOLS)})")
        if len(set(tools)) != len(tools):
            raise m.fail("[memory_safety].tools lists a tool twice")
        memory = MemorySafety(m.number("points", minimum=0), _in_lab(m.string("tests"), lab),
                              tools)

    performance = None
    if "performance" in doc:
        p = _Checker(file, "[performance]", doc["performance"])
        p.only(("points", "bench_args", "comparison", "requires", "full_credit_ratio",
                "review_ratio", "floor_margin"))
        comparison = p.string("comparison")
        if not comparison.strip():
            raise p.fail("[performance].comparison must name a comparison of the bench")
        full = p.number("full_credit_ratio", required=False,
                        default=_default(Performance, "full_credit_ratio"), minimum=1.0)
        review = p.number("review_ratio", required=False,
                          default=_default(Performance, "review_ratio"), above=1.0)
        floor_margin = p.number("floor_margin", required=False, default=FLOOR_MARGIN,
                                minimum=1.0)
        if (lab.root / "solutions").is_dir() and not lab.solution_file.is_file():
            raise p.fail(f"[performance] is scored against the reference solution, and "
                         f"solutions/{lab.folder}/{lab.topic}.cu does not exist: add it "
                         "(python3 -m grader new-lab makes the pair) or remove [performance]")
        performance = Performance(p.number("points", minimum=0),
                                  p.strings("bench_args", required=False), comparison,
                                  _requires(p, groups), full, review, floor_margin)

    metrics: list[Metric] = []
    for c in _tables(top, "metrics"):
        for gone in ("kernel_regex", "baseline_kernel_regex"):
            if gone in c.table:
                raise c.fail(f"{c.where}: '{gone}' is no longer read: a metric measures every "
                             "kernel of the profiled call, whatever its name (use `call` and "
                             "`per_baseline`; grader/README.md)")
        c.only(("name", "target", "args", "metric", "per", "call", "per_baseline",
                "expect_min", "expect_max", "points", "requires", "max_kernels"))
        name = c.string("name")
        c.where = f"[[metrics]] '{name}'"
        if any(x.name == name for x in metrics):
            raise c.fail(f"two [[metrics]] entries are called '{name}'")
        target = c.string("target", required=False, default=_default(Metric, "target"))
        if target not in METRIC_TARGETS:
            raise c.fail(f"{c.where}.target must be \"bench\" or \"tests\", not {target!r}")
        if target == "tests" and isinstance(c.table.get("args"), str):
            args = [c.table["args"]]  # a Catch2 spec may be given as one string
        else:
            args = c.strings("args", required=False)
        metric = c.string("metric")
        if not metric.strip():
            raise c.fail(f"{c.where}.metric must name an ncu metric")
        call = c.string("call", required=False, default=_default(Metric, "call"))
        if call not in METRIC_CALLS:
            raise c.fail(f"{c.where}.call must be \"candidate\" or \"baseline\", not {call!r}")
        per_baseline = c.table.get("per_baseline", False)
        if not isinstance(per_baseline, bool):
            raise c.fail(f"{c.where}.per_baseline must be true or false, not "
                         f"{_type_name(per_baseline)}")
        if target == "tests" and (call != "candidate" or per_baseline):
            raise c.fail(f"{c.where}: `call` and `per_baseline` need target = \"bench\" (only "
                         "the bench marks the student's and the baseline's calls)")
        if call == "baseline" and per_baseline:
            raise c.fail(f"{c.where}: per_baseline divides the candidate's value by the "
                         "baseline's; it needs call = \"candidate\"")
        lo = c.number("expect_min", required=False, default=None)
        hi = c.number("expect_max", required=False, default=None)
        if lo is not None and hi is not None and lo > hi:
            raise c.fail(f"{c.where}: expect_min ({lo:g}) is greater than expect_max ({hi:g})")
        points = c.number("points", required=False, default=_default(Metric, "points"), minimum=0)
        if points > 0 and lo is None and hi is None:
            raise c.fail(f"{c.where} earns points but has neither expect_min nor expect_max")
        if points > 0 and call == "baseline":
            raise c.fail(f"{c.where} earns points for the baseline's call, which is not the "
                         "student's work")
        # Like speed, metric points wait for correctness: by default the groups speed needs.
        requires = (_requires(c, groups) if "requires" in c.table
                    else list(performance.requires) if performance else [])
        most = c.number("max_kernels", required=False, default=None, minimum=1)
        if most is not None and not most.is_integer():
            raise c.fail(f"{c.where}.max_kernels must be a whole number, not {most:g}")
        metrics.append(Metric(name, target, args, metric,
                              c.string("per", required=False, default=None), call,
                              per_baseline, lo, hi, points, requires,
                              int(most) if most is not None else None))

    stretch = None
    if "stretch" in doc:
        t = _Checker(file, "[stretch]", doc["stretch"])
        t.only(("points", "comparison", "requires", "target_fraction", "floor_fraction",
                "sanitizer_tests", "bonus", "floor_margin"))
        comparison = t.string("comparison")
        if not comparison.strip():
            raise t.fail("[stretch].comparison must name a comparison of the bench")
        fraction = t.number("target_fraction", required=False,
                            default=_default(Stretch, "target_fraction"), above=0)
        floor = t.number("floor_fraction", required=False,
                           default=_default(Stretch, "floor_fraction"), minimum=0)
        if floor >= fraction:
            raise t.fail(f"[stretch].floor_fraction ({floor:g}) must be below "
                         f"target_fraction ({fraction:g})")
        stretch = Stretch(t.number("points", minimum=0), comparison, _requires(t, groups),
                          fraction, floor, t.string("sanitizer_tests", required=False), _bonus(t),
                          t.number("floor_margin", required=False, default=FLOOR_MARGIN,
                                   minimum=1.0))

    static = StaticRules()
    if "static" in doc:
        s = _Checker(file, "[static]", doc["static"])
        s.only(("allow_reference", "allow_define", "allow_include", "refuse_reference",
                "refuse_why"))
        static = StaticRules(s.strings("allow_reference", required=False),
                             s.strings("allow_define", required=False),
                             s.strings("allow_include", required=False),
                             s.strings("refuse_reference", required=False),
                             s.string("refuse_why", required=False) or "")
        if static.refuse_reference and not static.refuse_why:
            raise s.fail("[static].refuse_reference needs refuse_why: the reason a student "
                         "reads when the call is refused")
        for pattern in static.allow_include:
            if pattern.startswith("/") or ".." in Path(pattern).parts:
                raise s.fail(f"[static].allow_include: '{pattern}' must be a path inside the "
                             "repository, relative to its root")

    return Rubric(lab, title, student_files, test_timeout, build_timeout, groups, memory,
                  performance, metrics, static, stretch)


def load_rubric(lab: LabPaths) -> Rubric:
    """The rubric of `lab` (labs/NN_topic/grading.toml); raises RubricError."""
    path = lab.lab_dir / RUBRIC_FILE
    file = f"labs/{lab.folder}/{RUBRIC_FILE}"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as err:
        raise RubricError(f"{file}: no rubric (the file does not exist)") from err
    except (OSError, UnicodeDecodeError) as err:
        raise RubricError(f"{file}: cannot be read: {err}") from err
    return parse_rubric(lab, text, file)


def rubric_warnings(rubric: Rubric) -> list[str]:
    """Things that are allowed but probably unintended (e.g. points not totalling 100)."""
    warnings = []
    file = f"labs/{rubric.lab.folder}/{RUBRIC_FILE}"
    if abs(rubric.max_points - 100.0) > 1e-9:
        warnings.append(f"{file}: the points total {rubric.max_points:g}, not 100")
    if not rubric.correctness:
        warnings.append(f"{file}: no [[correctness]] groups")
    for f in rubric.student_files:
        if not (rubric.lab.root / f).is_file():
            warnings.append(f"{file}: student file '{f}' does not exist")
    if rubric.performance and not rubric.performance.requires:
        warnings.append(f"{file}: [performance] requires no correctness group, so a wrong "
                        "kernel could earn speed points")
    return warnings
