"""A lab's rubric: labs/NN_topic/grading.toml read into dataclasses and checked.

The schema is declared once, below the records: each table's keys with their types,
whether they are required and their checks, read by grader/rubric_schema.py's one loader;
the defaults are the records'. grader/README.md documents the same keys, with lab 04's
rubric as the example. `load_rubric` rejects what it does not know — a misspelt key would
otherwise silently change a grade — with a message that names the file, the table and the
key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from .paths import LabPaths
from .rubric_schema import (BOOLEAN, DERIVED, NUMBER, STRING, STRINGS, STRINGS_OR_STRING, TOP,
                            WHOLE_NUMBER, Above, AtLeast, Distinct, EachOneOf, Filled, OneOf,
                            Optional, Read, Required, SubTable, SubTables, Table, read_table,
                            type_name)
from .rubric_schema import RubricError as RubricError  # `as`: the grader imports it from here
from .tomlreader import tomllib

# A candidate time below floor / FLOOR_MARGIN is flagged: the measured limits (a copy
# kernel's bandwidth, an FMA loop's rate) are a few percent under the GPU's true peaks, so a
# fair kernel that matches them is not flagged (a rubric may set its own floor_margin).
FLOOR_MARGIN = 1.1

RUBRIC_FILE = "grading.toml"
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
METRIC_TARGETS = ("bench", "tests")
METRIC_CALLS = ("candidate", "baseline")


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
    # Said when the value loses the points, in the student's terms: what the number means and
    # what usually makes it bad; and the heading of the lab's handout section that fixes it.
    explain: str = ""
    handout_section: str = ""


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


# --- the schema -----------------------------------------------------------------------------
# Every table of grading.toml, declared once: its keys with their types, whether each is
# required, and its checks. A key declared without a default takes its record's (above);
# grader/README.md documents the same keys (grader/tests/test_rubric.py compares them).

_BENCH_COMPARISON = Filled("must name a comparison of the bench")
_KERNEL_REGEX_GONE = ("a metric measures every kernel of the profiled call, whatever its name "
                      "(use `call` and `per_baseline`; grader/README.md)")


def _inside_repository(patterns: list[str]) -> str | None:
    """[static].allow_include: each a path from the repository root, never out of it."""
    for pattern in patterns:
        if pattern.startswith("/") or ".." in Path(pattern).parts:
            return (f"names '{pattern}', which must be a path inside the repository, "
                    "relative to its root")
    return None


LAB_TABLE = Table("[lab]", Rubric, (
    Required("title", STRING, Filled()),
    Optional("test_timeout_s", NUMBER, Above(0)),
    Optional("build_timeout_s", NUMBER, Above(0)),
))

CORRECTNESS_TABLE = Table("[[correctness]]", CorrectnessGroup, (
    Required("name", STRING, Filled()),
    Required("tests", STRING, Filled()),
    Required("points", NUMBER, AtLeast(0)),
    Optional("hint", STRING),
    Optional("bonus", BOOLEAN),
), named_by="name")

MEMORY_SAFETY_TABLE = Table("[memory_safety]", MemorySafety, (
    Required("points", NUMBER, AtLeast(0)),
    Required("tests", STRING),
    Required("tools", STRINGS, Filled("must name at least one tool"),
             EachOneOf(SANITIZER_TOOLS, "compute-sanitizer tool"), Distinct()),
))

PERFORMANCE_TABLE = Table("[performance]", Performance, (
    Required("points", NUMBER, AtLeast(0)),
    Optional("bench_args", STRINGS, default=[]),
    Required("comparison", STRING, _BENCH_COMPARISON),
    Optional("requires", STRINGS, default=[]),
    Optional("full_credit_ratio", NUMBER, AtLeast(1)),
    Optional("review_ratio", NUMBER, Above(1)),
    Optional("floor_margin", NUMBER, AtLeast(1)),
))

METRICS_TABLE = Table("[[metrics]]", Metric, (
    Required("name", STRING),
    Optional("target", STRING, OneOf(METRIC_TARGETS)),
    Optional("args", STRINGS_OR_STRING),  # one string: a Catch2 spec, target "tests" only
    Required("metric", STRING, Filled("must name an ncu metric")),
    Optional("per", STRING),
    Optional("call", STRING, OneOf(METRIC_CALLS)),
    Optional("per_baseline", BOOLEAN),
    Optional("expect_min", NUMBER),
    Optional("expect_max", NUMBER),
    Optional("points", NUMBER, AtLeast(0)),
    Optional("requires", STRINGS, default=DERIVED),  # [performance].requires
    Optional("max_kernels", WHOLE_NUMBER, AtLeast(1)),
    Optional("explain", STRING),
    Optional("handout_section", STRING),
), named_by="name", gone={"kernel_regex": _KERNEL_REGEX_GONE,
                          "baseline_kernel_regex": _KERNEL_REGEX_GONE})

STATIC_TABLE = Table("[static]", StaticRules, (
    Optional("allow_reference", STRINGS),
    Optional("allow_define", STRINGS),
    Optional("allow_include", STRINGS, _inside_repository),
    Optional("refuse_reference", STRINGS),
    Optional("refuse_why", STRING),
))

STRETCH_TABLE = Table("[stretch]", Stretch, (
    Required("points", NUMBER, AtLeast(0)),
    Required("comparison", STRING, _BENCH_COMPARISON),
    Optional("requires", STRINGS, default=[]),
    Optional("target_fraction", NUMBER, Above(0)),
    Optional("floor_fraction", NUMBER, AtLeast(0)),
    Optional("sanitizer_tests", STRING),
    Optional("bonus", BOOLEAN),
    Optional("floor_margin", NUMBER, AtLeast(1)),
))

# Read by grader/course/releases.py (the labs whose answers this lab's given code holds);
# the rubric only checks it.
RELEASE_TABLE = Table("[release]", None, (
    Optional("contains_answers_of", STRINGS, default=[]),
))

RUBRIC_SCHEMA = Table(TOP, Rubric, (
    # Default: the one file the folder names, labs/NN_topic/topic.cu.
    Optional("student_files", STRINGS, Filled("must name at least one file"), Distinct(),
             default=DERIVED),
    Required("lab", SubTable(LAB_TABLE)),
    Optional("correctness", SubTables(CORRECTNESS_TABLE), default=[]),
    Optional("memory_safety", SubTable(MEMORY_SAFETY_TABLE), default=None),
    Optional("performance", SubTable(PERFORMANCE_TABLE), default=None),
    Optional("metrics", SubTables(METRICS_TABLE), default=[]),
    Optional("static", SubTable(STATIC_TABLE), default=None),
    Optional("release", SubTable(RELEASE_TABLE), default=None),
    Optional("stretch", SubTable(STRETCH_TABLE), default=None),
))


# --- what one key alone cannot say ----------------------------------------------------------

def _student_files(lab: LabPaths, top: Read) -> list[str]:
    if "student_files" not in top.given:
        return [f"labs/{lab.folder}/{lab.topic}.cu"]
    lab_dir = lab.lab_dir.resolve()
    for name in top["student_files"]:
        path = Path(name)
        if path.is_absolute() or ".." in path.parts:
            raise top.fail(f"student file '{name}' must be a path relative to the repository "
                           f"root inside labs/{lab.folder}/")
        resolved = (lab.root / path).resolve()
        if resolved == lab_dir or lab_dir not in resolved.parents:
            raise top.fail(f"student file '{name}' is outside the lab folder labs/{lab.folder}/")
        if resolved.name == RUBRIC_FILE or "tests" in resolved.relative_to(lab_dir).parts[:-1]:
            raise top.fail(f"student file '{name}' may not be the rubric or a test file")
    return list(top["student_files"])


def _in_lab(spec: str, lab: LabPaths) -> str:
    """`spec` limited to the lab's tests: a spec that names no [labNN] tag gets the lab's tag
    in front of each of its comma-separated alternatives ("[model]" -> "[lab04][model]")."""
    if "[lab" in spec.lower() or '"' in spec:
        return spec
    return ",".join(f"[{lab.tag}]{alt.strip()}" for alt in spec.split(","))


def _requires(table: Read, groups: list[CorrectnessGroup]) -> list[str]:
    names = {g.name for g in groups}
    for name in table["requires"]:
        if name not in names:
            known = ", ".join(repr(n) for n in sorted(names)) or "none"
            raise table.fail(f"{table.where}.requires names '{name}', which is not a "
                             f"[[correctness]] group (groups: {known})")
    return list(table["requires"])


def _metric(c: Read, groups: list[CorrectnessGroup], performance: Performance | None) -> Metric:
    target, call, per_baseline = c["target"], c["call"], c["per_baseline"]
    args = c["args"]
    if isinstance(args, str):
        if target != "tests":
            raise c.fail(f"{c.where}.args must be an array of strings, not {type_name(args)} "
                         "(one Catch2 spec string is for target = \"tests\")")
        args = [args]
    if target == "tests" and (call != "candidate" or per_baseline):
        raise c.fail(f"{c.where}: `call` and `per_baseline` need target = \"bench\" (only "
                     "the bench marks the student's and the baseline's calls)")
    if call == "baseline" and per_baseline:
        raise c.fail(f"{c.where}: per_baseline divides the candidate's value by the "
                     "baseline's; it needs call = \"candidate\"")
    lo, hi = c["expect_min"], c["expect_max"]
    if lo is not None and hi is not None and lo > hi:
        raise c.fail(f"{c.where}: expect_min ({lo:g}) is greater than expect_max ({hi:g})")
    if c["points"] > 0 and lo is None and hi is None:
        raise c.fail(f"{c.where} earns points but has neither expect_min nor expect_max")
    if c["points"] > 0 and call == "baseline":
        raise c.fail(f"{c.where} earns points for the baseline's call, which is not the "
                     "student's work")
    # Like speed, metric points wait for correctness: by default the groups speed needs.
    requires = (_requires(c, groups) if "requires" in c.given
                else list(performance.requires) if performance else [])
    return c.build(Metric, args=args, requires=requires)


def parse_rubric(lab: LabPaths, text: str, file: str | None = None) -> Rubric:
    """A rubric from grading.toml text; `file` names it in error messages."""
    file = file or f"labs/{lab.folder}/{RUBRIC_FILE}"
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise RubricError(f"{file}: not valid TOML: {err}") from err

    top = read_table(RUBRIC_SCHEMA, doc, file)
    student_files = _student_files(lab, top)

    groups = [c.build(CorrectnessGroup, tests=_in_lab(c["tests"], lab))
              for c in top["correctness"]]

    memory = None
    if top["memory_safety"]:
        m = top["memory_safety"]
        memory = m.build(MemorySafety, tests=_in_lab(m["tests"], lab))

    performance = None
    if top["performance"]:
        p = top["performance"]
        if (lab.root / "solutions").is_dir() and not lab.solution_file.is_file():
            raise p.fail(f"[performance] is scored against the reference solution, and "
                         f"solutions/{lab.folder}/{lab.topic}.cu does not exist: add it "
                         "(python3 -m grader new-lab makes the pair) or remove [performance]")
        performance = p.build(Performance, requires=_requires(p, groups))

    metrics = [_metric(c, groups, performance) for c in top["metrics"]]

    stretch = None
    if top["stretch"]:
        t = top["stretch"]
        if t["floor_fraction"] >= t["target_fraction"]:
            raise t.fail(f"[stretch].floor_fraction ({t['floor_fraction']:g}) must be below "
                         f"target_fraction ({t['target_fraction']:g})")
        stretch = t.build(Stretch, requires=_requires(t, groups))

    static = StaticRules()
    if top["static"]:
        static = top["static"].build(StaticRules)
        if static.refuse_reference and not static.refuse_why:
            raise top.fail("[static].refuse_reference needs refuse_why: the reason a student "
                           "reads when the call is refused")

    return Rubric(lab, student_files=student_files, correctness=groups, memory_safety=memory,
                  performance=performance, metrics=metrics, static=static, stretch=stretch,
                  **top["lab"].values)


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
