"""CUDA Memory Labs grader: builds, checks, times and scores lab submissions."""

__version__ = "0.2.0"
