"""What every kind of graded part has (grader/parts/kinds.py lists them): the Part
protocol, the Entry of a rubric's part, the PartContext its stage hands it, and the rules
parts share (a bonus part, a case's status, the sentence of a part graded without a GPU).

A part owns its table of grading.toml: its record, its keys (`schema`, read by
grader/rubric_schema.py's loader) and what one key alone cannot say (`read`); the rubric
holds what every part read by its key (`Rubric.tables`). A part is measured, then scored:
`measure(ctx)` returns a typed measurement that carries the table it measured against
(None: nothing to measure for this rubric), and `score(measured, full_groups)` turns it
into PartResults and does no I/O. `record` keeps what else the measurement gives the lab's
result (the test rows, the bench's Timing)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, TypeVar

from ..paths import LabPaths
from ..result import Kind, LabResult, PartResult
from ..rubric_schema import Read, Table

if TYPE_CHECKING:  # the test runs' and the measurements' types only
    from ..catch2.testrun import Case, CaseRun
    from ..measure import Context

M = TypeVar("M")


class RubricTables(Protocol):
    """What a part reads of a lab's rubric (grader/rubric.py's Rubric): every part's table
    by its key in grading.toml (a record, a list of them for an array of tables, None or []
    where the rubric has none)."""

    @property
    def tables(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class Entry:
    """One part a rubric scores, named as its result is: its kind and name, its maximum (0
    for a bonus part, whose points come on top of the lab's), the points a bonus part
    offers (None: no bonus) and what it measures (`grader list -v`)."""

    kind: Kind
    name: str
    max_points: float
    bonus: float | None = None
    measures: str = ""

    @property
    def key(self) -> tuple[Kind, str]:
        return (self.kind, self.name)


@dataclass
class PartContext:
    """What one lab's parts are measured from, made once its tests have run
    (grader/stages/lab.py): the rubric, the canonical cases and their runs, the GPU (its
    measurements' Context, None without one), the GPU section of a stage (entered by
    `section`, its wait given back to the lab's GPU time), the groups at full marks once
    correctness is scored, and each part's measurement by its table for the parts after it
    (the stretch part reads the bench's)."""

    rubric: RubricTables
    folder: str
    canonical: "list[Case]"
    runs: "Mapping[str, CaseRun]"
    say: Callable[[str], None]
    section: Callable[[str], AbstractContextManager[Any]]  # yields the device
    gpu: "Context | None" = None
    why_no_gpu: str = ""
    full_groups: set[str] = field(default_factory=set)
    measured: dict[str, Any] = field(default_factory=dict)

    @property
    def has_gpu(self) -> bool:
        return self.gpu is not None


class Part(Protocol[M]):
    """One kind of part a rubric scores. `kind` names its results and `label` the kind in
    reports; `table` is its key in grading.toml, `schema` the keys of its table (of each
    table of the array, when `many`: [[metrics]]); `gpu`: measured on a CUDA device only
    (without one, every entry is "not graded")."""

    kind: Kind
    label: str
    table: str
    schema: Table
    many: bool
    gpu: bool

    def read(self, found: Read, lab: LabPaths, tables: Mapping[str, Any]) -> Any:
        """Its record from one table as the schema read it, with what one key alone cannot
        say checked (RubricError from `found.fail`); `tables`: the parts' tables read before
        it, in report order."""
        ...

    def entries(self, rubric: RubricTables) -> list[Entry]:
        """The parts this rubric scores of this kind, in report order (none: the rubric has
        no such table)."""
        ...

    def measure(self, ctx: PartContext) -> M | None:
        """Everything the part's points need, measured (None: nothing to score)."""
        ...

    def score(self, measured: M, full_groups: set[str]) -> list[PartResult]:
        """The parts' results from the measurement, in the order of `entries`."""
        ...

    def record(self, measured: M, ctx: PartContext, out: LabResult) -> None:
        """What else the measurement leaves in the lab's result or the context."""
        ...


def in_lab(spec: str, lab: LabPaths) -> str:
    """`spec` limited to the lab's tests: a spec that names no [labNN] tag gets the lab's tag
    in front of each of its comma-separated alternatives ("[model]" -> "[lab04][model]")."""
    if "[lab" in spec.lower() or '"' in spec:
        return spec
    return ",".join(f"[{lab.tag}]{alt.strip()}" for alt in spec.split(","))


def as_bonus(part: PartResult) -> PartResult:
    """A bonus part: what it earns comes on top of the lab's maximum, so its maximum is 0
    and the points it offers are kept in details["bonus"]."""
    part.details = {**part.details, "bonus": part.max_points}
    part.max_points = 0.0
    return part


def status_of(run: object) -> str | None:
    """A case's status (testrun.CaseRun), None for a case that did not run."""
    status: str | None = getattr(run, "status", None)
    return status


def not_graded_reason(kind: Kind) -> str:
    """The standard sentence for a GPU part graded without a CUDA device."""
    return f"Not graded: no CUDA device, so this {kind.replace('_', ' ')} part was not run."


# What each part but Build says of a lab without its file: Build says which file, once.
NOT_SUBMITTED = "No points: there is no submission for this lab (see Build)."
