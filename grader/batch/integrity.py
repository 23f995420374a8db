"""An integrity report for a batch (grader/README.md, "Grading a class"): per lab, the
submissions whose student files are identical (after normalising whitespace and
comments), those equal to the reference solution or to the untouched skeleton, and a
similarity ranking of every pair made by Debian's `similarity-tester` (`sim_c++`, which
compares token runs, so renamed variables and moved functions still match). Without the
tool the ranking is left out and the report says so.

These are leads for a person to read, never a verdict: submissions built from the same
skeleton share much of their text.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

SIM_TOOLS = ("sim_c++", "sim_c")
SIM_LINE = re.compile(r"^(\S+?)\.cu consists for (\d+) % of (\S+?)\.cu material")
_TOKENS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                     re.S)


def normalise(text: str) -> str:
    """The text without comments, trailing spaces, blank lines or indentation, so that a
    copy with its comments or layout changed still hashes the same."""
    text = _TOKENS.sub(lambda m: "" if m.group(0)[:2] in ("//", "/*") else m.group(0),
                       text.replace("\r\n", "\n"))
    lines = (re.sub(r"\s+", " ", line).strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line) + "\n"


def digest(files: dict[str, str | None]) -> str | None:
    """One hash of a submission's student files of a lab (None: all of them missing)."""
    if all(text is None for text in files.values()):
        return None
    h = hashlib.sha256()
    for rel in sorted(files):
        h.update(rel.encode() + b"\0" + normalise(files[rel] or "").encode() + b"\0")
    return h.hexdigest()


def read_files(tree: Path, rels: list[str]) -> dict[str, str | None]:
    """The student files of a submission folder (None where missing or not a file)."""
    out = {}
    for rel in rels:
        path = Path(tree) / rel
        out[rel] = (path.read_text(errors="replace")
                    if path.is_file() and not path.is_symlink() else None)
    return out


def lab_sources(root: Path, lab_folder: str, rels: list[str]
                ) -> tuple[dict[str, str | None], dict[str, str | None]]:
    """(reference, skeleton) files of a lab's student files: solutions/<lab>/<file> and the
    skeleton in labs/<lab>/ of the checkout at `root` (None where missing, e.g. a student
    copy without solutions/)."""
    root = Path(root)
    prefix = f"labs/{lab_folder}/"
    reference = {rel: (root / "solutions" / lab_folder / rel[len(prefix):]).read_text()
                 if rel.startswith(prefix) and (root / "solutions" / lab_folder /
                                                rel[len(prefix):]).is_file() else None
                 for rel in rels}
    return reference, read_files(root, rels)


@dataclass
class LabIntegrity:
    lab: str
    identical: list[list[str]] = field(default_factory=list)  # groups of 2 or more
    reference: list[str] = field(default_factory=list)
    skeleton: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    ranking: list[tuple[str, str, int]] = field(default_factory=list)  # a, b, percent
    sim_note: str = ""


def compare(lab: str, subs: dict[str, dict[str, str | None]],
            reference: dict[str, str | None] | None = None,
            skeleton: dict[str, str | None] | None = None) -> LabIntegrity:
    """Identical groups and copies of the reference or skeleton among `subs`
    (student -> {rel: text})."""
    report = LabIntegrity(lab)
    ref = digest(reference) if reference else None
    skel = digest(skeleton) if skeleton else None
    groups: dict[str, list[str]] = {}
    for student in sorted(subs):
        h = digest(subs[student])
        if h is None:
            report.missing.append(student)
            continue
        groups.setdefault(h, []).append(student)
        if h == ref:
            report.reference.append(student)
        if h == skel:
            report.skeleton.append(student)
    report.identical = sorted(g for h, g in groups.items() if len(g) > 1 and h != skel)
    return report


def sim_tool() -> str | None:
    return next((shutil.which(t) for t in SIM_TOOLS if shutil.which(t)), None)


def sim_ranking(texts: dict[str, str], min_percent: int = 20, run: int = 24
                ) -> list[tuple[str, str, int]]:
    """Pairs of students, most similar first: (a, b, percent), the percent being the larger
    of "a consists for P % of b's material" and the reverse, as `sim_c++ -p -e -a` reports
    it. Pairs under `min_percent` are left out. Raises FileNotFoundError without the tool."""
    tool = sim_tool()
    if tool is None:
        raise FileNotFoundError("similarity-tester is not installed (apt-get install "
                                "similarity-tester)")
    best: dict[tuple[str, str], int] = {}
    with tempfile.TemporaryDirectory(prefix="cml-sim-") as tmp:
        names = []
        for student, text in sorted(texts.items()):
            path = Path(tmp) / f"{student}.cu"
            path.write_text(text)
            names.append(path.name)
        if len(names) < 2:
            return []
        proc = subprocess.run([tool, "-p", "-e", "-a", "-s", f"-r{run}", f"-t{min_percent}",
                               *names], cwd=tmp, capture_output=True, text=True,
                              timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(f"{Path(tool).name} failed: {proc.stderr.strip()}")
    for line in proc.stdout.splitlines():
        match = SIM_LINE.match(line.strip())
        if not match:
            continue
        a, pct, b = match[1], int(match[2]), match[3]
        if a == b:
            continue
        first, second = sorted((a, b))
        key = (first, second)
        best[key] = max(best.get(key, 0), pct)
    ranked = [(a, b, p) for (a, b), p in best.items() if p >= min_percent]
    return sorted(ranked, key=lambda x: (-x[2], x[0], x[1]))


def lab_report(lab: str, subs: dict[str, dict[str, str | None]],
               reference: dict[str, str | None] | None = None,
               skeleton: dict[str, str | None] | None = None,
               min_percent: int = 50) -> LabIntegrity:
    """`compare` and, where the tool is installed, the similarity ranking (the skeleton and
    the reference ranked alongside the students as `_skeleton` and `_reference`)."""
    report = compare(lab, subs, reference, skeleton)
    texts = {s: "\n".join(t or "" for _, t in sorted(files.items()))
             for s, files in subs.items() if s not in report.missing}
    for name, files in (("_reference", reference), ("_skeleton", skeleton)):
        if files and digest(files) is not None:
            texts[name] = "\n".join(t or "" for _, t in sorted(files.items()))
    try:
        report.ranking = sim_ranking(texts, min_percent)
    except FileNotFoundError as err:
        report.sim_note = f"no similarity ranking: {err}"
    except (RuntimeError, OSError, subprocess.SubprocessError) as err:
        report.sim_note = f"no similarity ranking: {err}"
    return report


def markdown(reports: list[LabIntegrity], top: int = 20) -> str:
    """integrity.md: one section per lab."""
    out = ["# Integrity report", "",
           "Leads for a person to read, not verdicts. Files are compared after removing "
           "comments, blank lines and indentation; the ranking comes from similarity-tester "
           "(`sim_c++ -p`: the share of one file's tokens found in runs in the other).", ""]
    for r in reports:
        out += [f"## {r.lab}", ""]
        out.append("- Identical submissions: " + ("; ".join(", ".join(g) for g in r.identical)
                                                 if r.identical else "none"))
        out.append("- Equal to the reference solution: " + (", ".join(r.reference) or "none"))
        out.append("- Equal to the untouched skeleton: " + (", ".join(r.skeleton) or "none"))
        if r.missing:
            out.append("- No student file: " + ", ".join(r.missing))
        out.append("")
        if r.sim_note:
            out += [r.sim_note, ""]
        elif r.ranking:
            out += ["| Pair | Similarity |", "|---|---:|"]
            out += [f"| {a} – {b} | {p} % |" for a, b, p in r.ranking[:top]]
            out.append("")
        else:
            out += ["No pair above the similarity threshold.", ""]
    return "\n".join(out)
