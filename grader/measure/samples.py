"""The grader believes a bench document's samples, never its summaries: `recompute` restates
every summary the scoring reads (grader/benchdoc.py's records) from the raw samples,
as the harness's summarize() (common/src/timing.cpp) computes them, and lists where the
document disagrees with them; `altered_problem` is the sentence for such a document."""

from __future__ import annotations

import math
from dataclasses import replace

from ..benchdoc import STATS_KEYS, CaseTiming, Document, PairTiming, SampleStats, Side

# The bench prints every number as the double it holds (common/src/json.cpp): a summary that
# the harness computed from its samples agrees with their recomputation far within this.
AGREE_REL = 1e-6
ALTERED = ("the bench document's figures disagree with its own samples: it was altered; "
           "not believed")


def sample_stats(samples: list[float] | tuple[float, ...]) -> SampleStats:
    """What the harness's summarize() (common/src/timing.cpp) makes of `samples`: median,
    min, max, mean, stdev (over n - 1), rse (the standard error over the mean; 1 for one
    sample) and n; all 0 for no samples."""
    n = len(samples)
    if n == 0:
        return SampleStats((), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0)
    ordered = sorted(samples)
    half = n // 2
    median = ordered[half] if n % 2 else 0.5 * (ordered[half - 1] + ordered[half])
    mean = math.fsum(samples) / n
    stdev = math.sqrt(math.fsum((x - mean) ** 2 for x in samples) / (n - 1)) if n > 1 else 0.0
    rse = stdev / math.sqrt(n) / mean if n > 1 and mean > 0 else 1.0
    return SampleStats(tuple(samples), median, ordered[0], ordered[-1], mean, stdev, rse, n)


def pair_ratios(baseline: list[float] | tuple[float, ...],
                candidate: list[float] | tuple[float, ...]) -> list[float]:
    """The per-pair speedups as the harness takes them: baseline time / candidate time of
    the same pair (0 where the candidate's time is 0)."""
    return [b / c if c > 0 else 0.0 for b, c in zip(baseline, candidate)]


def _agree(claimed: float | None, computed: float, scale: float = 0.0) -> bool:
    if claimed is None:
        return False
    return abs(claimed - computed) <= AGREE_REL * max(abs(claimed), abs(computed), scale)


def _restated(stats: SampleStats, samples: tuple[float, ...], where: str,
              problems: list[str]) -> SampleStats:
    """`stats` with every summary recomputed from `samples`; each claimed figure that
    disagrees is a problem."""
    fresh = sample_stats(samples)
    assert fresh.mean is not None
    scales = {"stdev": abs(fresh.mean), "rse": 1.0}
    for key in STATS_KEYS:
        claimed, computed = stats.figure(key), fresh.figure(key)
        assert computed is not None
        if key in stats.written and not _agree(claimed, computed, scales.get(key, 0.0)):
            shown = stats.written[key]
            problems.append(f"{where} {key} is {shown!r}, its samples give {computed:.9g}")
    if "n" in stats.written and stats.n != len(samples):
        problems.append(f"{where} n is {stats.written['n']!r} with {len(samples)} samples")
    return replace(fresh, written=stats.written)


def _side(side: Side, where: str, problems: list[str]) -> Side:
    """One timed side (a comparison's baseline or candidate, or a case) restated: its times,
    host times and work rates."""
    stats: dict[str, SampleStats] = {}
    for key in ("ms", "host_ms"):
        claimed = getattr(side, key)
        if claimed is None:
            continue
        if claimed.samples is None:
            problems.append(f"{where} {key} has no list of samples (non-negative numbers)")
            continue
        stats[key] = _restated(claimed, claimed.samples, f"{where} {key}", problems)
    side = replace(side, **stats)
    if "ms" not in stats:
        return side
    median = side.median_ms
    rates: dict[str, float | None] = {}
    for rate, amount in (("gflops", side.work.flop), ("gbytes_per_s", side.work.bytes)):
        if rate not in side.written or amount is None:
            continue
        fresh = amount / median * 1e-6 if amount > 0 and median and median > 0 else None
        claimed = side.rate(rate)
        if (fresh is None) != (claimed is None) or (
                fresh is not None and not _agree(claimed, fresh)):
            problems.append(f"{where} {rate} is {side.written[rate]!r}, its work and median "
                            "time give " + ("none" if fresh is None else f"{fresh:.9g}"))
        rates[rate] = fresh
    return replace(side, **rates)


def _comparison(comp: PairTiming, problems: list[str]) -> PairTiming:
    where = f"comparison '{comp.name}'"
    base = _side(comp.baseline, f"{where} baseline", problems)
    cand = _side(comp.candidate, f"{where} candidate", problems)
    comp = replace(comp, baseline=base, candidate=cand)
    base_ms = base.ms.samples if base.ms is not None else None
    cand_ms = cand.ms.samples if cand.ms is not None else None
    if base_ms is None or cand_ms is None:
        return comp
    if len(base_ms) != len(cand_ms):
        problems.append(f"{where}: the baseline has {len(base_ms)} samples and the candidate "
                        f"{len(cand_ms)}")
        return comp
    ratios = pair_ratios(base_ms, cand_ms)
    claimed = comp.speedup.written.get("samples")
    if not isinstance(claimed, list) or len(claimed) != len(ratios):
        count = len(claimed) if isinstance(claimed, list) else "no"
        problems.append(f"{where} speedup has {count} samples for {len(ratios)} pairs")
    else:
        bad = [i for i, (c, r) in enumerate(zip(claimed, ratios))
               if not (isinstance(c, (int, float)) and not isinstance(c, bool)
                       and _agree(float(c), r))]
        if bad:
            problems.append(f"{where} speedup sample {bad[0]} is {claimed[bad[0]]!r}, the "
                            f"pair's times give {ratios[bad[0]]:.9g}")
    return replace(comp, speedup=_restated(comp.speedup, tuple(ratios), f"{where} speedup",
                                           problems))


def recompute(doc: Document) -> tuple[Document, list[str]]:
    """The document with every summary recomputed from the raw samples it holds, and where
    it disagreed with them (empty: it agrees with itself).

    For each comparison, each side's `ms` and `host_ms` (median, min, max, mean, stdev, rse,
    n), its GFLOP/s and GB/s, and the speedup: its samples must be baseline.samples[i] /
    candidate.samples[i] and its summaries theirs; both sides must hold as many samples. For
    each case, the same of its one side. A summary is believed within a relative AGREE_REL
    (the document's printed precision); the result holds the recomputed numbers either way."""
    problems: list[str] = []
    comparisons = tuple(_comparison(c, problems) for c in doc.comparisons)
    cases = tuple(_case(c, problems) for c in doc.cases)
    return replace(doc, comparisons=comparisons, cases=cases), problems


def _case(case: CaseTiming, problems: list[str]) -> CaseTiming:
    side = _side(case, f"case '{case.name or None}'", problems)
    return side if isinstance(side, CaseTiming) else case


def altered_problem(problems: list[str], shown: int = 2) -> str | None:
    """The sentence for a document that disagrees with its samples (None when it agrees)."""
    if not problems:
        return None
    more = len(problems) - shown
    return (f"{ALTERED} (" + "; ".join(problems[:shown])
            + (f"; and {more} more" if more > 0 else "") + ")")
