"""Reads the XML report Catch2 (2.x and 3.x) writes with `-r xml -o FILE`.

Catch2 2's report is `<Catch>` holding a `<Group>` that holds the `<TestCase>` elements;
Catch2 3's is `<Catch2TestRun>` holding the `<TestCase>` elements directly. Both write a
test case's element when it starts and close it when it ends, so a report cut short by a
crash or a kill ends inside the case that was running.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class CaseResult:
    name: str
    tags: list[str]
    passed: bool
    messages: list[str] = field(default_factory=list)
    file: str = ""
    line: int = 0
    seconds: float | None = None


REPORT_ROOTS = ("Catch", "Catch2TestRun")  # Catch2 2, Catch2 3


def parse_tags(text: str) -> tuple[str, ...]:
    """The tags of a Catch2 test case, "[gpu][Lab04]" -> ("gpu", "lab04") (Catch2 compares
    tags without regard to case)."""
    return tuple(t.lower() for t in re.findall(r"\[([^\]]+)\]", text))


def parse_catch_xml(text: str) -> list[CaseResult]:
    """Test cases in a Catch2 XML report; raises ValueError when it is not one."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as err:
        raise ValueError(f"not a complete Catch2 XML report: {err}") from err
    if root.tag not in REPORT_ROOTS:
        raise ValueError(f"not a Catch2 XML report: its root element is <{root.tag}>")
    cases = []
    for tc in root.iter("TestCase"):
        overall = tc.find("OverallResult")
        passed = overall is not None and overall.get("success") == "true"
        messages = []
        for node in tc.iter():
            if node.tag == "Expression" and node.get("success") == "false":
                orig = (node.findtext("Original") or "").strip()
                expanded = (node.findtext("Expanded") or "").strip()
                messages.append(f"{node.get('filename', '')}:{node.get('line', '')}: {orig} "
                                f"with {expanded}".strip())
            elif node.tag in ("Failure", "FatalErrorCondition", "Exception"):
                messages.append((node.text or "").strip())
            elif node.tag == "Info" or node.tag == "Warning":
                if not passed and node.text:
                    messages.append(node.text.strip())
        seconds = None
        if overall is not None and (duration := overall.get("durationInSeconds")):
            seconds = float(duration)
        tags = list(parse_tags(tc.get("tags", "")))
        cases.append(CaseResult(tc.get("name", ""), tags, passed,
                                [m for m in messages if m], tc.get("filename", ""),
                                int(tc.get("line", "0") or 0), seconds))
    return cases


def close_cut_report(text: str) -> str | None:
    """A report cut short, up to the end of its last finished test case, with the elements
    open there closed, innermost first: whatever the report itself opened (Catch2 2's
    `<Catch><Group>`, Catch2 3's `<Catch2TestRun>`). None when no test case finished or the
    part kept is not well-formed XML."""
    end = text.rfind("</TestCase>")
    if end < 0:
        return None
    head = text[:end + len("</TestCase>")]
    parser = ET.XMLPullParser(events=("start", "end"))
    still_open: list[str] = []
    try:
        parser.feed(head)
        for event, element in parser.read_events():
            if event == "start":
                still_open.append(element.tag)
            else:
                still_open.pop()
    except ET.ParseError:
        return None
    return head + "".join(f"</{tag}>" for tag in reversed(still_open))


COMPLETE, CUT, ALTERED = "complete", "cut", "altered"
ALTERED_MESSAGE = ("the test report was altered after the tests ended (or written twice): "
                   "not believed")


def report_state(text: str) -> str:
    """How a report read from the grader's pipe ended: COMPLETE (one well-formed document,
    nothing but whitespace after it), CUT (a well-formed start that stops early, or nothing:
    the process ended mid-run) or ALTERED (not well-formed, or anything after the end of the
    document, such as a second one: someone wrote into the report besides Catch2)."""
    if not text.strip():
        return CUT
    if not text.lstrip().startswith("<"):
        return ALTERED
    parser = ET.XMLPullParser(events=("start", "end"))
    depth, root, closed = 0, "", False
    try:
        parser.feed(text)
        for event, element in parser.read_events():
            root = root or element.tag
            depth += 1 if event == "start" else -1
            closed = closed or (event == "end" and depth == 0)
    except ET.ParseError:
        return ALTERED
    if not closed:
        return CUT
    try:
        parser.close()
    except ET.ParseError:
        return ALTERED
    # Comments and processing instructions may follow a document's root; not here.
    return COMPLETE if text.rstrip().endswith(f"</{root}>") else ALTERED


def read_catch_xml(path: Path) -> list[CaseResult]:
    return parse_catch_xml(path.read_text(errors="replace"))
