"""The bench document's records built from plain JSON, for the tests of the reader, the
restatement from samples and the speed of light."""

from __future__ import annotations

from grader.measure import samples
from grader.benchdoc import Document, read_document


def read(doc: dict | None) -> Document | None:
    return read_document(doc) if doc is not None else None


def recompute(doc: dict) -> tuple[dict, list[str]]:
    """samples.recompute on the records of `doc`, back as JSON."""
    fresh, problems = samples.recompute(read_document(doc))
    return fresh.to_dict(), problems


def sample_stats(values: list[float]) -> dict:
    return samples.sample_stats(values).to_dict()
