"""The adversarial suite's cases and the grades they must get (see README.md beside this file).

A case is a folder `NN_name/` holding the student file(s) of lab NN at their repository paths
and `case.toml`. This module reads and checks the cases, makes a submission folder from one
(recipes: a copy of the lab's reference or skeleton, the grader's checkout path filled in,
CRLF and BOM, symbolic links), compiles its student file the way the lab's CMake does, and
checks a grader's result.json and exports against the case's `[expect]` table, with or without
a GPU. The host test (grader/tests/test_adversarial.py) and the GPU runner (run.py) share it.
"""

from __future__ import annotations

import html
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from grader.paths import ROOT, LabPaths, discover_labs
from grader.rubric import load_rubric
from grader.tomlreader import tomllib

CASES_DIR = Path(__file__).resolve().parent
BASES = CASES_DIR / "_bases"  # one honest student file per lab that most cases patch
PATCH = "student.patch"
REPO_MARK = "@REPO_ROOT@"  # in student files and symlink targets: the grader's checkout

CLASSES = {
    "reach_hidden": "reach the reference or the hidden tests",
    "forbidden_call": "forbidden calls through doors a deny-list misses",
    "replace_harness": "replace the harness from the student file",
    "escape_clock": "work escaping the clock, or speed without the work",
    "reach_trusted": "reach the trusted side's buffers (the baseline's output, the inputs) in the bench",
    "forge_report": "forge the test report or the bench document from the student's process",
    "relay_state": "pass state from one process of the grade to a later one",
    "dilute_metric": "a cheap extra kernel that makes a profiler metric look right",
    "denial_of_service": "denial of service",
    "fair": "fair code that must keep full marks",
    "skip_concept": "correct code that skips the lab's lesson",
    "broken_honest": "broken but honest",
}
TOP_KEYS = {"lab", "class", "description", "expect", "compiles", "test_timeout", "make_from",
            "make_substitute", "make_transform", "make_symlink"}
REFUSALS = ("static", "build", "submission", "any")
# "short": fewer points than the parts offer (some lost, not necessarily all): a cheat whose
# trick gained nothing still loses what its honest code underneath loses.
LEVELS = ("zero", "short", "full")
BONUS_LEVELS = ("zero", "partial", "full")  # "partial": some of the offered points, not all
EXPECT_KEYS = {"refused": REFUSALS, "names": list, "correctness": LEVELS, "speed": LEVELS,
               "memory_safety": LEVELS, "metrics": LEVELS, "total": LEVELS, "no_leak": bool,
               "bonus": BONUS_LEVELS, "zero_parts": list, "max_total": (int, float),
               "max_stage_seconds": (int, float), "max_lab_seconds": (int, float),
               "no_survivors": bool}
TRANSFORMS = ("crlf", "bom")
MIN_SECRET = 16  # shorter lines ("}", "return 0;") prove nothing


class CaseError(Exception):
    """A case folder that is not a valid case; the message names it and every problem."""


@dataclass
class Case:
    name: str
    dir: Path
    lab: LabPaths
    cls: str
    description: str
    expect: dict
    compiles: bool = True
    test_timeout: float | None = None
    make_from: str | None = None  # "solution", "skeleton" or "base" (_bases/); the last two
    # with the case's student.patch applied where there is one
    substitute: bool = False
    transform: list[str] = field(default_factory=list)
    symlinks: list[dict] = field(default_factory=list)
    student_files: list[str] = field(default_factory=list)

    @property
    def denial_of_service(self) -> bool:
        return self.cls == "denial_of_service" or self.test_timeout is not None

    def expected_text(self) -> str:
        """The expectation in a few words, for the table."""
        e = self.expect
        parts = []
        if "refused" in e:
            names = ",".join(e.get("names", []))
            parts.append(f"refused:{e['refused']}" + (f"({names})" if names else ""))
        for key, short in (("total", "T"), ("correctness", "C"), ("memory_safety", "M"),
                           ("speed", "S"), ("metrics", "X"), ("bonus", "B")):
            if key in e:
                parts.append(f"{short}={'0' if e[key] == 'zero' else e[key]}")
        if "max_total" in e:
            parts.append(f"T<={e['max_total']:g}")
        for pattern in e.get("zero_parts", []):
            parts.append(f"0:'{str(pattern)[:24]}'")
        if e.get("no_leak"):
            parts.append("no-leak")
        if "max_stage_seconds" in e:
            parts.append(f"stage<={e['max_stage_seconds']:g}s")
        if e.get("no_survivors"):
            parts.append("no-survivors")
        return " ".join(parts)


def _labs_by_number(root: Path) -> dict[str, LabPaths]:
    return {lab.number: lab for lab in discover_labs(root)}


def load_case(folder: Path, root: Path = ROOT) -> Case:
    """One case; raises CaseError listing every problem of its case.toml and files."""
    problems: list[str] = []
    try:
        doc = tomllib.loads((folder / "case.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise CaseError(f"{folder.name}: cannot read case.toml ({err})") from None
    for key in sorted(set(doc) - TOP_KEYS):
        problems.append(f"unknown key '{key}'")
    labs = _labs_by_number(root)
    number = doc.get("lab")
    lab = labs.get(number) if isinstance(number, str) else None
    if lab is None:
        problems.append(f"lab = {number!r} is not one of {sorted(labs)}")
    elif not folder.name.startswith(number + "_"):
        problems.append(f"the folder name must start with the lab number '{number}_'")
    cls = doc.get("class")
    if cls not in CLASSES:
        problems.append(f"class = {cls!r} is not one of {sorted(CLASSES)}")
    description = doc.get("description")
    if not isinstance(description, str) or not description.strip():
        problems.append("description (one sentence) is missing")
    expect = doc.get("expect")
    if not isinstance(expect, dict) or not expect:
        problems.append("[expect] is missing or empty")
        expect = {}
    for key, value in expect.items():
        allowed = EXPECT_KEYS.get(key)
        if allowed is None:
            problems.append(f"[expect] unknown key '{key}'")
        elif allowed is list:
            if not (isinstance(value, list) and all(isinstance(v, str) and v for v in value)):
                problems.append(f"[expect] {key} must be a list of strings")
        elif allowed is bool:
            if value is not True:
                problems.append(f"[expect] {key} can only be true")
        elif isinstance(allowed, tuple) and allowed and isinstance(allowed[0], type):
            if isinstance(value, bool) or not isinstance(value, allowed) or value <= 0:
                problems.append(f"[expect] {key} must be a positive number")
        elif value not in allowed:
            problems.append(f"[expect] {key} = {value!r} is not one of {list(allowed)}")
    if "names" in expect and "refused" not in expect:
        problems.append("[expect] names needs refused")
    if cls == "fair" and expect.get("total") != "full":
        problems.append("a fair case must expect total = \"full\"")
    if cls == "skip_concept" and "max_total" not in expect:
        problems.append("a skip_concept case must expect max_total (the most it may score)")
    if "max_total" in expect and expect.get("total") in ("zero", "full"):
        problems.append(f"[expect] max_total beside total = \"{expect['total']}\": keep one "
                        "(they repeat or contradict each other)")
    make_from = doc.get("make_from")
    if make_from not in (None, "solution", "skeleton", "base"):
        problems.append(f"make_from = {make_from!r} is not 'solution', 'skeleton' or 'base'")
    if (folder / PATCH).is_file() and make_from not in ("base", "skeleton"):
        problems.append(f"{PATCH} is only read with make_from = \"base\" or \"skeleton\"")
    transform = doc.get("make_transform", [])
    if not isinstance(transform, list) or any(t not in TRANSFORMS for t in transform):
        problems.append(f"make_transform must be a list of {list(TRANSFORMS)}")
        transform = []
    links = doc.get("make_symlink", [])
    links = [links] if isinstance(links, dict) else links
    if not isinstance(links, list) or not all(
            isinstance(x, dict) and set(x) == {"path", "target"} and
            all(isinstance(v, str) and v for v in x.values()) for x in links):
        problems.append("make_symlink must be {path = ..., target = ...} or a list of them")
        links = []
    timeout = doc.get("test_timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or timeout <= 0):
        problems.append("test_timeout must be a positive number of seconds")
    compiles = doc.get("compiles", True)
    if not isinstance(compiles, bool):
        problems.append("compiles must be true or false")
    student_files: list[str] = []
    if lab is not None:
        try:
            student_files = load_rubric(lab).student_files
        except Exception as err:  # a rubric problem is reported, not raised
            problems.append(f"the lab's rubric cannot be read: {err}")
        for rel in student_files:
            have = (folder / rel).is_file() and not (folder / rel).is_symlink()
            linked = any(rel == x["path"] or rel.startswith(x["path"].rstrip("/") + "/")
                         for x in links)
            if make_from and have:
                problems.append(f"{rel} is in the folder but make_from makes it")
            elif not make_from and not have and not linked:
                problems.append(f"{rel} is missing (and no make_from or make_symlink makes it)")
    extra = [p for p in folder.rglob("*") if p.is_file() and p.name not in ("case.toml", PATCH)
             and str(p.relative_to(folder)) not in student_files]
    for p in extra:
        problems.append(f"{p.relative_to(folder)} is not a student file of lab {number}")
    if problems:
        raise CaseError(f"{folder.name}: " + "; ".join(problems))
    return Case(folder.name, folder, lab, cls, description.strip(), expect, compiles,
                float(timeout) if timeout is not None else None, make_from,
                bool(doc.get("make_substitute", False)), list(transform), list(links),
                list(student_files))


def case_folders(cases_dir: Path = CASES_DIR) -> list[Path]:
    return sorted(p for p in cases_dir.iterdir() if p.is_dir() and p.name[:2].isdigit())


def load_cases(cases_dir: Path = CASES_DIR, root: Path = ROOT) -> list[Case]:
    """Every case, in name order; raises CaseError naming every bad one."""
    cases, bad = [], []
    for folder in case_folders(cases_dir):
        try:
            cases.append(load_case(folder, root))
        except CaseError as err:
            bad.append(str(err))
    if bad:
        raise CaseError("\n".join(bad))
    return cases


def select(cases: list[Case], names: list[str] | None = None, labs: list[str] | None = None,
           classes: list[str] | None = None) -> list[Case]:
    import fnmatch
    out = []
    for c in cases:
        if names and not any(fnmatch.fnmatch(c.name, pat) for pat in names):
            continue
        if labs and c.lab.number not in labs:
            continue
        if classes and c.cls not in classes:
            continue
        out.append(c)
    return out


# --------------------------------------------------------------------------- making a case

def based(case: Case, rel: str) -> bytes:
    """The lab's base file (_bases/NN_topic/, an honest implementation written for the suite)
    with the case's student.patch applied: most cases differ from it by a few lines, and the
    patch is those lines."""
    return patched(case, rel, BASES / case.lab.folder / Path(rel).name)


def patched(case: Case, rel: str, base: Path) -> bytes:
    """`base` (the file the case starts from: the lab's base or its skeleton) with the case's
    student.patch applied, if it has one."""
    patch = case.dir / PATCH
    if not patch.is_file():
        return base.read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / rel
        target.parent.mkdir(parents=True)
        shutil.copyfile(base, target)
        proc = subprocess.run(["git", "apply", "--whitespace=nowarn", str(patch.resolve())],
                              cwd=tmp, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{case.name}: {PATCH} does not apply to {base}: "
                               f"{proc.stderr.strip()}")
        return target.read_bytes()


def materialize(case: Case, dest: Path, repo: Path = ROOT) -> Path:
    """A submission folder laid out like the repository, at `dest` (replaced if there)."""
    repo = Path(repo).resolve()
    if dest.exists() or dest.is_symlink():
        shutil.rmtree(dest) if dest.is_dir() and not dest.is_symlink() else dest.unlink()
    dest.mkdir(parents=True)
    for rel in case.student_files:
        if case.make_from == "solution":
            text = (repo / "solutions" / case.lab.folder / Path(rel).name).read_bytes()
        elif case.make_from == "skeleton":
            text = patched(case, rel, repo / rel)
        elif case.make_from == "base":
            text = based(case, rel)
        elif (case.dir / rel).is_file():
            text = (case.dir / rel).read_bytes()
        else:
            continue  # made by a symbolic link below
        if case.substitute:
            text = text.replace(REPO_MARK.encode(), str(repo).encode())
        if "crlf" in case.transform:
            text = text.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        if "bom" in case.transform and not text.startswith(b"\xef\xbb\xbf"):
            text = b"\xef\xbb\xbf" + text
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text)
    for link in case.symlinks:
        path = dest / link["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(link["target"].replace(REPO_MARK, str(repo)), path)
    return dest


def nvcc_command(case: Case, source: Path, obj: Path, repo: Path = ROOT) -> list[str]:
    """The compile of the lab's CMake (cmake/CmlLab.cmake, a Release build with the default
    architecture): the lab folder and common/include on the include path, C++17, sm_75."""
    from grader.tools import find_tool
    nvcc = find_tool("nvcc") or "nvcc"
    return [nvcc, "-O3", "-DNDEBUG", "--generate-code=arch=compute_75,code=[compute_75,sm_75]",
            "-lineinfo", "-std=c++17", f"-I{repo / 'labs' / case.lab.folder}",
            f"-I{repo / 'common' / 'include'}", "-x", "cu", "-c", str(source), "-o", str(obj)]


def compile_object(case: Case, submission: Path, out_dir: Path, repo: Path = ROOT,
                   timeout: float = 300) -> tuple[bool, str, Path]:
    """Compiles the case's (first) student file from `submission`; (ok, log, object)."""
    rel = case.student_files[0]
    obj = out_dir / f"{case.name}.o"
    out_dir.mkdir(parents=True, exist_ok=True)
    source = submission / rel
    try:
        proc = subprocess.run(nvcc_command(case, source, obj, repo), cwd=out_dir,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, f"nvcc did not finish within {timeout:g} s", obj
    return proc.returncode == 0 and obj.is_file(), proc.stdout + proc.stderr, obj


# --------------------------------------------------------------------------- secrets

def _squeeze(line: str) -> str:
    return " ".join(line.split())


def _text_lines(path: Path) -> set[str]:
    try:
        return {_squeeze(x) for x in path.read_text(errors="replace").splitlines()}
    except OSError:
        return set()


_PUBLIC: dict[str, set[str]] = {}


def public_lines(repo: Path = ROOT) -> set[str]:
    """Every line of what students may read anyway: labs/, common/ and handouts/."""
    key = str(repo)
    if key not in _PUBLIC:
        public: set[str] = set()
        for top in ("labs", "common", "handouts"):
            for path in sorted((repo / top).rglob("*")):
                if path.is_file() and path.suffix in (".cu", ".cuh", ".cpp", ".hpp", ".h",
                                                      ".md", ".txt", ".toml", ""):
                    public |= _text_lines(path)
        _PUBLIC[key] = public
    return _PUBLIC[key]


def secret_lines(lab_folder: str, repo: Path = ROOT, own: set[str] | None = None) -> set[str]:
    """Lines of the lab's hidden tests and reference (everything under solutions/<lab>) that
    no public file of the course has (labs/, common/, handouts/), at least MIN_SECRET
    characters long, less the lines the submission itself contains."""
    public = public_lines(repo)
    secret: set[str] = set()
    for path in sorted((repo / "solutions" / lab_folder).rglob("*")):
        if path.is_file():
            secret |= _text_lines(path)
    return {s for s in secret - public - (own or set())
            if len(s) >= MIN_SECRET and not s.startswith("//")}


def own_lines(submission: Path, case: Case) -> set[str]:
    out: set[str] = set()
    for rel in case.student_files:
        path = submission / rel
        if path.is_file() and not path.is_symlink():
            out |= _text_lines(path)
    return out


def shown_text(path: Path) -> str:
    """What a file shows a reader: every string of a JSON document (the submission path of
    result.json left out: it is the instructor's own input), or the unescaped text of the
    XML, HTML and Markdown exports."""
    raw = path.read_text(errors="replace")
    if path.suffix == ".json":
        try:
            doc = json.loads(raw)
        except ValueError:
            return raw
        if isinstance(doc, dict):
            doc = {k: v for k, v in doc.items() if k != "submission"}
        strings: list[str] = []

        def walk(v) -> None:
            if isinstance(v, str):
                strings.append(v)
            elif isinstance(v, dict):
                for k, x in v.items():
                    strings.append(str(k))
                    walk(x)
            elif isinstance(v, list):
                for x in v:
                    walk(x)
        walk(doc)
        return "\n".join(strings)
    return html.unescape(raw)


def find_leaks(files: list[Path], secrets: set[str], tree_paths: list[str]) -> list[str]:
    """'file: what' for every secret line and grader path found in what the files show."""
    found = []
    paths = [p for p in tree_paths if p and len(p) > 4]
    for path in files:
        text = shown_text(path)
        squeezed = [_squeeze(line) for line in text.splitlines()]
        for secret in sorted(secrets):
            if any(secret in line for line in squeezed if len(line) >= len(secret)):
                found.append(f"{path.name}: a line of the hidden tests or reference: {secret[:80]!r}")
                break
        for tree in paths:
            if tree in text:
                found.append(f"{path.name}: the grader's folder {tree}")
    return found


# --------------------------------------------------------------------------- expectations

PASS, FAIL, NA = "pass", "fail", "n/a"


@dataclass
class Check:
    key: str
    verdict: str  # PASS, FAIL or NA (cannot be checked here)
    detail: str


def _parts(lab: dict, kind: str) -> list[dict]:
    return [p for p in lab.get("parts", []) if p.get("kind") == kind]


def _sum(parts: list[dict], key: str) -> float:
    return round(sum(float(p.get(key) or 0) for p in parts), 3)


def _tool_present(result: dict, kind: str) -> bool:
    tools = result.get("tools") or {}
    name = "compute-sanitizer" if kind == "memory_safety" else "ncu"
    return bool(tools.get(name))


def got_summary(result: dict, lab_folder: str) -> str:
    """Points per part kind, e.g. 'C 25/70 M n/g S 0/20 X 0/10 = 25/100' (n/g: not graded,
    n/m: not measured, rev: under review)."""
    lab = next((x for x in result.get("labs", []) if x.get("lab") == lab_folder), None)
    if lab is None:
        return "no result" + (f" ({result['errors'][0][:60]})" if result.get("errors") else "")
    out = []
    build = _parts(lab, "build")
    if build and build[0].get("reason"):
        out.append("B:" + ("no submission" if "submission" in build[0]["reason"].lower()
                           or "symbolic link" in build[0]["reason"] else "failed"))
    static = _parts(lab, "static")
    if static and static[0].get("reason"):
        out.append("static:refused")
    for kind, short in (("correctness", "C"), ("memory_safety", "M"), ("performance", "S"),
                        ("metric", "X")):
        parts = _parts(lab, kind)
        if not parts:
            continue
        statuses = {p.get("status") for p in parts}
        if statuses == {"not_graded"}:
            out.append(f"{short} n/g")
        elif statuses == {"not_measured"}:
            out.append(f"{short} n/m")
        else:
            flag = " rev" if "review" in statuses else ""
            out.append(f"{short} {_sum(parts, 'points'):g}/{_sum(parts, 'max_points'):g}{flag}")
    out.append(f"= {float(lab.get('points', 0)):g}/{float(lab.get('max_points', 0)):g}")
    return " ".join(out)


def _level(parts: list[dict], level: str, kind: str, result: dict, gpu: bool) -> Check:
    scored = [p for p in parts if float(p.get("max_points") or 0) > 0
              or p.get("status") == "not_measured"]
    if not parts:
        return Check(kind, NA, "the lab has no such part")
    got = f"{_sum(parts, 'points'):g}/{_sum(parts, 'max_points'):g}"
    if level == "zero":
        if _sum(parts, "points") > 0:
            return Check(kind, FAIL, f"expected 0, got {got}")
        unmeasured = [p for p in scored if p.get("status") == "not_measured"]
        if unmeasured and gpu:
            # A part the submission made unmeasurable must score 0, not leave the maximum;
            # only a missing tool excuses it.
            if _tool_present(result, kind) or kind == "performance":
                return Check(kind, FAIL, "not measured (points left the maximum): "
                             + (unmeasured[0].get("reason") or "")[:120])
            return Check(kind, NA, "the tool is not installed here")
        if not gpu and all(p.get("status") == "not_graded" for p in parts):
            return Check(kind, NA, "needs a GPU")
        return Check(kind, PASS, got)
    # short or full
    if not gpu and any(p.get("status") == "not_graded" for p in parts):
        return Check(kind, NA, "needs a GPU")
    if level == "short":
        unmeasured = [p for p in parts if p.get("status") == "not_measured"]
        if unmeasured and (_tool_present(result, kind) or kind == "performance"):
            return Check(kind, FAIL, "not measured: " + (unmeasured[0].get("reason") or "")[:120])
        if _sum(parts, "points") < _sum(parts, "max_points"):
            return Check(kind, PASS, got)
        return Check(kind, FAIL, f"expected fewer than all points, got {got}")
    short = [p for p in parts if float(p.get("points") or 0) < float(p.get("max_points") or 0)]
    unmeasured = [p for p in parts if p.get("status") == "not_measured"]
    if unmeasured:
        if _tool_present(result, kind) or kind == "performance":
            return Check(kind, FAIL, "not measured: " + (unmeasured[0].get("reason") or "")[:120])
        return Check(kind, NA, "the tool is not installed here")
    if short:
        p = short[0]
        return Check(kind, FAIL, f"got {got}: {p.get('name')}: {(p.get('reason') or '')[:160]}")
    return Check(kind, PASS, got)


def _zero_part(lab: dict, pattern: str, gpu: bool) -> Check:
    """Every part whose name contains `pattern` scores 0 (`zero_parts`): a cheat aimed at one
    part (a metric it dilutes) gains nothing there, whatever its other parts earn."""
    key = f"zero_parts[{pattern[:40]}]"
    parts = [p for p in lab.get("parts", []) if pattern in (p.get("name") or "")]
    if not parts:
        return Check(key, FAIL, "no part has this in its name")
    got = _sum(parts, "points")
    if got > 0:
        return Check(key, FAIL, f"expected 0, got {got:g}/{_sum(parts, 'max_points'):g}")
    if not gpu and all(p.get("status") == "not_graded" for p in parts):
        return Check(key, NA, "needs a GPU")
    if gpu and any(p.get("status") == "not_measured" for p in parts):
        return Check(key, FAIL, "not measured (points left the maximum)")
    return Check(key, PASS, f"0/{_sum(parts, 'max_points'):g}")


def _max_total(lab: dict, bound: float, result: dict, gpu: bool) -> Check:
    """The lab's points, bonus included, are at most `bound` (`max_total`): correct code that
    skips the lab's lesson earns what its correctness earns, not full marks."""
    points, most = float(lab.get("points") or 0), float(lab.get("max_points") or 0)
    got = f"{points:g}/{most:g}"
    if points > bound:  # earned points only grow with more of the grade: a FAIL stands
        return Check("max_total", FAIL, f"{got}, more than {bound:g}")
    if not gpu:
        # The GPU parts score nothing here (not graded): the points are what the host parts
        # earned, and a GPU could only add to them. Host points above the bound already
        # failed above; for the suite's cases that cannot happen (every lab's host parts
        # offer fewer points than their bound of 70), so without a GPU the check is n/a.
        return Check("max_total", NA, f"{got} from the host parts; GPU parts need a GPU")
    unmeasured = [p for p in lab.get("parts", []) if p.get("status") == "not_measured"]
    left_out = sum(max(float(p.get("max_points") or 0),
                       float((p.get("details") or {}).get("points_if_measured") or 0))
                   for p in unmeasured)
    if unmeasured and points + left_out > bound:
        # Measured, the part could have lifted the points over the bound.
        if any(_tool_present(result, p.get("kind", "")) or p.get("kind") == "performance"
               for p in unmeasured):
            return Check("max_total", FAIL, f"{got}, but not measured (points left the "
                         f"maximum): {unmeasured[0].get('name')}")
        return Check("max_total", NA, f"{got}, but not everything was measured here "
                     f"({unmeasured[0].get('name')})")
    return Check("max_total", PASS, f"{got}, at most {bound:g}")


def _bonus_level(lab: dict, level: str, result: dict, gpu: bool) -> Check:
    """The optional bonus's parts together (every part that offers points on top of the
    lab's maximum: details["bonus"]): "zero" none of their points, "full" all the points
    they offer, "partial" some but not all."""
    parts = [p for p in lab.get("parts", []) if "bonus" in (p.get("details") or {})]
    if not parts:
        return Check("bonus", NA, "the lab offers no bonus")
    got = _sum(parts, "points")
    offered = round(sum(float(p["details"]["bonus"] or 0) for p in parts), 3)
    text = f"{got:g} of {offered:g} bonus points"
    if level == "zero" and got > 0:  # points already earned fail it, GPU or not
        return Check("bonus", FAIL, f"expected 0, got {text}")
    if not gpu and any(p.get("status") == "not_graded" for p in parts):
        return Check("bonus", NA, "needs a GPU")
    unmeasured = [p for p in parts if p.get("status") == "not_measured"]
    if unmeasured:
        if not _tool_present(result, "memory_safety"):
            return Check("bonus", NA, "the tool is not installed here")
        return Check("bonus", FAIL, "not measured: " + (unmeasured[0].get("reason") or "")[:120])
    ok = {"zero": got == 0, "full": got >= offered,
          "partial": 0 < got < offered}[level]
    if ok:
        return Check("bonus", PASS, text)
    short = [p for p in parts if float(p.get("points") or 0) < float(p["details"]["bonus"] or 0)]
    why = f": {short[0].get('name')}: {(short[0].get('reason') or '')[:160]}" \
        if short and level == "full" else ""
    return Check("bonus", FAIL, f"expected {level}, got {text}{why}")


def _refusal(lab: dict) -> str | None:
    """How the submission was refused before any of its code ran, if it was."""
    kinds = {"no_submission": "submission", "static_violation": "static",
             "compile_error": "build", "build_timeout": "build"}
    if lab.get("failure") in kinds:  # the stage that stopped the lab, as the grader says
        return kinds[lab["failure"]]
    build = (_parts(lab, "build") or [{}])[0]
    reason = build.get("reason") or ""
    if reason and ("No submission" in reason or "symbolic link" in reason
                   or "not a regular file" in reason or "not in the submission" in reason):
        return "submission"
    if (lab.get("build") or {}).get("ok") is False:
        return "build"
    static = (_parts(lab, "static") or [{}])[0]
    if static.get("reason"):
        return "static"
    return None


def check_result(case: Case, result: dict, files: list[Path], *, gpu: bool,
                 secrets: set[str] | None = None, tree_paths: list[str] | None = None,
                 survivors: list[str] | None = None) -> list[Check]:
    """Every expectation of `case` against a result.json (and the files written with it).
    `gpu`: whether the grade was made with a GPU (else GPU parts are 'n/a' here)."""
    checks: list[Check] = []
    errors = result.get("errors") or []
    if errors:
        checks.append(Check("grader errors", FAIL, "; ".join(errors)[:200]))
    lab = next((x for x in result.get("labs", []) if x.get("lab") == case.lab.folder), None)
    if lab is None:
        checks.append(Check("result", FAIL, f"no result for {case.lab.folder}"))
        return checks
    e = case.expect
    refusal = _refusal(lab)
    if "refused" in e:
        want = e["refused"]
        ok = refusal is not None if want == "any" else refusal == want
        ran = [t for t in lab.get("tests", []) if t.get("status") not in ("not_run", None)]
        if ok and ran:
            ok = False
        detail = (f"refused ({refusal})" if refusal else "not refused") + \
            (f", {len(ran)} tests ran" if ran else "")
        if ok and e.get("names"):
            texts = []
            for kind in ("static", "build"):
                for p in _parts(lab, kind):
                    texts.append(p.get("reason") or "")
                    texts.append(json.dumps(p.get("details") or {}))
            texts += (lab.get("build") or {}).get("errors") or []
            blob = "\n".join(texts)
            missing = [n for n in e["names"] if n not in blob]
            if missing and refusal in ("static", "build"):
                ok = False
                detail += f"; the reason does not name {', '.join(missing)}"
        checks.append(Check("refused", PASS if ok else FAIL, detail))
    kinds = {"correctness": "correctness", "memory_safety": "memory_safety",
             "speed": "performance", "metrics": "metric"}
    for key, kind in kinds.items():
        if key not in e:
            continue
        parts = _parts(lab, kind)
        if key == "metrics":
            parts = [p for p in parts if float(p.get("max_points") or 0) > 0 or
                     float((p.get("details") or {}).get("points_if_measured") or 0) > 0]
        if key == "correctness" and not gpu and e[key] == "full":
            host = [t for t in lab.get("tests", []) if t.get("layer") == "host"]
            bad = [t["name"] for t in host if t.get("status") != "passed"]
            graded = [p for p in parts if p.get("status") == "graded"]
            short = [p["name"] for p in graded
                     if float(p.get("points") or 0) < float(p.get("max_points") or 0)]
            if bad or short:
                checks.append(Check(key, FAIL, "host: " + "; ".join((short + bad)[:3])))
            else:
                checks.append(Check(key, PASS, f"{len(host)} host tests passed"))
            continue
        check = _level(parts, e[key], kind, result, gpu)
        checks.append(Check(key, check.verdict, check.detail))
    if "bonus" in e:
        checks.append(_bonus_level(lab, e["bonus"], result, gpu))
    for pattern in e.get("zero_parts", []):
        checks.append(_zero_part(lab, str(pattern), gpu))
    if "total" in e:
        points, most = float(lab.get("points") or 0), float(lab.get("max_points") or 0)
        if e["total"] == "zero":
            checks.append(Check("total", PASS if points == 0 else FAIL, f"{points:g}/{most:g}"))
        elif gpu:
            unmeasured = [p for p in lab.get("parts", []) if p.get("status") == "not_measured"]
            if points >= most > 0 and not unmeasured:
                checks.append(Check("total", PASS, f"{points:g}/{most:g}"))
            elif points >= most > 0:
                checks.append(Check("total", NA, f"{points:g}/{most:g}, but not everything "
                                    f"was measured here ({unmeasured[0].get('name')})"))
            else:
                short = [p for p in lab.get("parts", [])
                         if float(p.get("points") or 0) < float(p.get("max_points") or 0)]
                why = f"{short[0].get('name')}: {(short[0].get('reason') or '')[:160]}" \
                    if short else ""
                checks.append(Check("total", FAIL, f"{points:g}/{most:g} {why}".strip()))
        else:
            graded = [p for p in lab.get("parts", []) if p.get("status") == "graded"
                      and float(p.get("points") or 0) < float(p.get("max_points") or 0)]
            host = [t for t in lab.get("tests", []) if t.get("layer") == "host"]
            bad = [t["name"] for t in host if t.get("status") != "passed"]
            if refusal or graded or bad or not host:
                why = (f"refused: {refusal}" if refusal else
                       "; ".join([p["name"] for p in graded] + bad)[:200] or "no host tests")
                checks.append(Check("total", FAIL, f"host parts: {why}"))
            else:
                checks.append(Check("total", PASS, f"host parts full ({len(host)} host tests); "
                                    "GPU parts need a GPU"))
    if "max_total" in e:
        checks.append(_max_total(lab, float(e["max_total"]), result, gpu))
    if e.get("no_leak"):
        leaks = find_leaks(files, secrets or set(), tree_paths or [])
        checks.append(Check("no_leak", FAIL if leaks else PASS,
                            "; ".join(leaks)[:300] if leaks else f"{len(files)} files clean"))
    if "max_stage_seconds" in e:
        limit = float(e["max_stage_seconds"])
        slow = [(t.get("name"), t.get("seconds")) for t in lab.get("tests", [])
                if isinstance(t.get("seconds"), (int, float)) and t["seconds"] > limit]
        checks.append(Check("max_stage_seconds", FAIL if slow else PASS,
                            f"{slow[0][0]}: {slow[0][1]:.0f} s" if slow else
                            f"every test within {limit:g} s"))
    if "max_lab_seconds" in e:
        wall = float(lab.get("wall_seconds") or 0)
        limit = float(e["max_lab_seconds"])
        checks.append(Check("max_lab_seconds", PASS if wall <= limit else FAIL,
                            f"{wall:.0f} s of {limit:g}"))
    exported = _exports_agree(result, files)
    if exported is not None:
        checks.append(exported)
    if e.get("no_survivors"):
        if survivors is None:
            checks.append(Check("no_survivors", NA, "checked by the GPU runner"))
        else:
            checks.append(Check("no_survivors", FAIL if survivors else PASS,
                                "; ".join(survivors)[:200] if survivors else "none left"))
    return checks


def _exports_agree(result: dict, files: list[Path]) -> Check | None:
    """The exports give the grade result.json gives: Gradescope's score is the points,
    PrairieLearn's the fraction of the maximum. None when neither was written."""
    points, most = float(result.get("points") or 0), float(result.get("max_points") or 0)
    seen, problems = [], []
    for path in files:
        if path.name != "results.json" or path.parent.name not in ("gradescope", "prairielearn"):
            continue
        try:
            score = float(json.loads(path.read_text()).get("score"))
        except (OSError, ValueError, TypeError):
            problems.append(f"{path.parent.name}: no readable score")
            continue
        # PrairieLearn's score is a fraction in [0, 1]: bonus points above the maximum cap it.
        want = points if path.parent.name == "gradescope" else (
            min(1.0, points / most) if most else 0.0)
        seen.append(path.parent.name)
        if abs(score - want) > 1e-3 * max(1.0, abs(want)):
            problems.append(f"{path.parent.name} score {score:g}, result.json {want:g}")
    if not seen and not problems:
        return None
    return Check("exports", FAIL if problems else PASS,
                 "; ".join(problems) if problems else f"{', '.join(seen)} agree")


def verdict(checks: list[Check]) -> str:
    """PASS when every check that could be made passed (PART when some could not be made
    here), FAIL when one failed."""
    if any(c.verdict == FAIL for c in checks):
        return "FAIL"
    if any(c.verdict == NA for c in checks):
        return "PART" if any(c.verdict == PASS for c in checks) else "N/A"
    return "PASS"


def output_files(folder: Path) -> list[Path]:
    """result.json and every export beside it (not the batch's own stamp or log)."""
    return sorted(p for p in folder.rglob("*") if p.is_file()
                  and p.name not in ("stamp.json", "grade.log") and not p.name.endswith(".tmp"))


__all__ = ["Case", "CaseError", "Check", "CLASSES", "load_cases", "load_case", "select",
           "materialize", "compile_object", "nvcc_command", "secret_lines", "own_lines",
           "find_leaks", "check_result", "verdict", "got_summary", "output_files",
           "CASES_DIR", "PASS", "FAIL", "NA"]
