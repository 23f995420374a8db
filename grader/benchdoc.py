"""What a bench's JSON document (schema cml-bench/2, common/include/cml/timing.hpp) says about
its scored comparison: the summary kept in result.json, and the harness's verdicts on the
timed runs, each as the sentence a reason quotes (None when all is well). The protocol
behind those verdicts: docs/architecture.md, "The timing protocol"."""

from __future__ import annotations

from .result import BenchSummary


def number(d: dict, *keys: str) -> float | None:
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return float(d) if isinstance(d, (int, float)) else None


def summary(comp: dict, doc: dict) -> BenchSummary:
    """The scored comparison, plus the bench's other cases, derived metrics and the plots it
    declares (drawn by the HTML report)."""
    return BenchSummary(
        baseline_ms=(comp.get("baseline") or {}).get("ms"),
        candidate_ms=(comp.get("candidate") or {}).get("ms"),
        speedup=comp.get("speedup"),
        converged=comp.get("converged"),
        verification=(comp.get("candidate") or {}).get("verification"),
        baseline_verification=(comp.get("baseline") or {}).get("verification"),
        launches=(comp.get("candidate") or {}).get("launches"),
        baseline_launches=(comp.get("baseline") or {}).get("launches"),
        determinism=comp.get("determinism"),
        review=comp.get("review"),
        host_margin_ms={side: (comp.get(side) or {}).get("host_margin_ms")
                        for side in ("baseline", "candidate")},
        cases=doc.get("cases") or [],
        metrics=doc.get("metrics") or {},
        plots=doc.get("plots") or [],
    )

def timed_output_problem(comp: dict, whose: str = "your") -> str | None:
    """The candidate's output wrong in some run (which pair and sample, where, got and
    expected), the baseline's wrong in the same process, or a required determinism check
    failed."""
    cand = (comp.get("candidate") or {}).get("verification") or {}
    if not cand.get("checked"):
        return f"the output of {whose} timed kernel was not checked"
    if not cand.get("passed"):
        return f"the output of {whose} timed kernel was wrong: {_failure_text(cand)}"
    base = (comp.get("baseline") or {}).get("verification") or {}
    if base.get("checked") and not base.get("passed"):
        return (f"the baseline's output was wrong in the same run as {whose} code (does it "
                f"write outside its own output?): {_failure_text(base)}")
    det = comp.get("determinism") or {}
    if det.get("checked") and det.get("required") and det.get("identical") is False:
        return (f"{whose} kernel is not deterministic: "
                + (det.get("message") or "a second run on the same inputs gave other bits"))
    return None


def _failure_text(v: dict) -> str:
    if v.get("message"):
        return str(v["message"])
    f = v.get("first_failure")
    if not isinstance(f, dict):
        return "no run matched the expected result"
    return (f"{f.get('phase', 'timed')} pair {f.get('pair')} (sample {f.get('sample')}): "
            f"{f.get('mismatches')} of {f.get('elements')} elements wrong, the first "
            f"{f.get('where')} = {f.get('got')}, expected {f.get('expected')}")


def launch_problem(comp: dict) -> str | None:
    """A candidate call that launched no kernel (only where the bench counted launches)."""
    launches = (comp.get("candidate") or {}).get("launches")
    if not isinstance(launches, dict) or not launches.get("counted"):
        return None
    low, high = launches.get("min"), launches.get("max")
    if high == 0:
        return "your code launched no kernel (0 kernel launches in every timed call)"
    if low == 0:
        return (f"your code launched no kernel in some timed calls (0 to {high} launches per "
                "call): the output cannot have come from the timed work")
    return None


def review_problem(comp: dict) -> str | None:
    """The harness's review flag (work escaped the timing events), with its reasons."""
    review = comp.get("review")
    if not isinstance(review, dict) or not review.get("flagged"):
        return None
    reasons = [str(r) for r in review.get("reasons") or [] if r]
    return "; ".join(reasons) or "the host-time cross-check flagged the timing"
