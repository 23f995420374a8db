"""JUnit XML for CI test reports: one <testsuite> per lab, a <testcase> per test case
(classname labNN.<group>) and per scored part (classname labNN.parts).

Failed and crashed test cases carry <failure>/<error> with the test's messages; parts not
graded or not measured, test cases not run and parts flagged for review are <skipped> with
the reason (a GPU test case not run for want of a device: `message="needs a GPU"`), so a
report without a GPU is never all green. A test case's `time` is Catch2's duration.

The document validates against Jenkins' junit-10.xsd (the xunit plugin's schema; the test
suite checks it with xmllint). That schema has no `file`/`line` on <testcase>:
`to_junit(result, locations=True)` adds them, from the first "file:line:" Catch2 gave in a
failing case's messages, for reporters that annotate source lines (they accept them; strict
schema validators do not).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ..parts.kinds import label as kind_label
from ..result import (CRASHED, ERROR, FAILED, NOT_RUN, PASSED, TIMEOUT, GradeResult,
                      LabResult)
from .common import (FAIL, FLAG, PASS, SKIP, STATUS_WORDS, TEST_WORDS, fmt_points,
                     part_outcome, part_reason, part_speed_of_light, grader_problems,
                     submission_name, xml_text)


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit - 1] + "…"


NEEDS_GPU = "needs a GPU"
_LOCATION = re.compile(r"^(?P<file>[^\s:]+\.[A-Za-z+]+):(?P<line>\d+):")


def location(messages: list[str]) -> tuple[str, int] | None:
    """The first "file:line:" Catch2 put in front of a failing assertion's message."""
    for message in messages:
        m = _LOCATION.match(message.strip())
        if m:
            return m.group("file"), int(m.group("line"))
    return None


def _suite(lab: LabResult, gpu: bool = True, locations: bool = False) -> ET.Element:
    number = lab.lab[:2]
    suite = ET.Element("testsuite", name=xml_text(f"{lab.lab}: {lab.title}"))
    props = ET.SubElement(suite, "properties")
    for key, value in (("points", fmt_points(lab.points)),
                       ("max_points", fmt_points(lab.max_points))):
        ET.SubElement(props, "property", name=key, value=value)
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    total_time = 0.0

    for t in lab.tests:
        case = ET.SubElement(suite, "testcase", name=xml_text(t.name),
                             classname=xml_text(f"lab{number}.{t.group or 'tests'}"))
        if t.seconds is not None:
            case.set("time", f"{t.seconds:.3f}")
            total_time += t.seconds
        counts["tests"] += 1
        text = xml_text("\n".join(t.messages))
        first = _one_line(t.messages[0]) if t.messages else TEST_WORDS.get(t.status, t.status)
        if t.status == PASSED:
            pass
        elif t.status == FAILED:
            el = ET.SubElement(case, "failure", message=xml_text(first), type="failed")
            el.text = text
            counts["failures"] += 1
        elif t.status in (ERROR, CRASHED, TIMEOUT):
            el = ET.SubElement(case, "error", message=xml_text(first), type=t.status)
            el.text = text
            counts["errors"] += 1
        else:  # NOT_RUN
            needs_gpu = t.status == NOT_RUN and t.layer == "gpu" and not gpu
            el = ET.SubElement(case, "skipped",
                               message=NEEDS_GPU if needs_gpu else xml_text(first))
            if needs_gpu:
                el.text = xml_text(text or "not run: no CUDA device")
            counts["skipped"] += 1
        where = location(t.messages) if locations and t.status != PASSED else None
        if where:
            case.set("file", xml_text(where[0]))
            case.set("line", str(where[1]))
        if t.max_points:
            ET.SubElement(case, "system-out").text = (
                f"{fmt_points(t.points)} / {fmt_points(t.max_points)} points"
                + (" (hidden test)" if t.hidden else ""))

    for p in lab.parts:
        label = kind_label(p.kind)
        name = p.name if p.name.startswith(label) else f"{label}: {p.name}"
        case = ET.SubElement(suite, "testcase", name=xml_text(name),
                             classname=f"lab{number}.parts")
        counts["tests"] += 1
        outcome = part_outcome(p)
        reason = part_reason(p)
        summary = (f"{fmt_points(p.points)} / {fmt_points(p.max_points)} points, "
                   f"{STATUS_WORDS.get(p.status, p.status)}")
        if outcome == FAIL:
            el = ET.SubElement(case, "failure", message=xml_text(_one_line(reason)),
                               type=p.kind)
            el.text = xml_text(f"{summary}\n{reason}")
            counts["failures"] += 1
        elif outcome in (SKIP, FLAG):
            ET.SubElement(case, "skipped", message=xml_text(_one_line(reason)))
            counts["skipped"] += 1
        sol = part_speed_of_light(p)
        ET.SubElement(case, "system-out").text = xml_text(
            summary + (f"\n{reason}" if reason and outcome == PASS else "")
            + (f"\n{sol.text()}" if sol is not None else ""))

    for key, count in counts.items():
        suite.set(key, str(count))
    suite.set("time", f"{(total_time or lab.wall_seconds):.3f}")
    return suite


def to_junit(result: GradeResult, locations: bool = False) -> str:
    root = ET.Element("testsuites", name=xml_text(f"CUDA Memory Labs: {submission_name(result)}"))
    totals = {"tests": 0, "failures": 0, "errors": 0}  # junit-10.xsd: no skipped here
    for lab in result.labs:
        suite = _suite(lab, gpu=result.device is not None, locations=locations)
        root.append(suite)
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{sum(lab.wall_seconds for lab in result.labs):.3f}")
    if result.errors:
        suite = ET.SubElement(root, "testsuite", name="grader", tests=str(len(result.errors)),
                              failures="0", errors=str(len(result.errors)), skipped="0")
        for i, err in enumerate(grader_problems(result), 1):
            case = ET.SubElement(suite, "testcase", name=f"grader problem {i}",
                                 classname="grader")
            ET.SubElement(case, "error", message=xml_text(_one_line(err)),
                          type="grader").text = xml_text(err)
        root.set("tests", str(totals["tests"] + len(result.errors)))
        root.set("errors", str(totals["errors"] + len(result.errors)))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
