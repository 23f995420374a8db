"""Running Catch2 test binaries the way grading needs them: test specs matched the way
Catch2 matches them (spec.py), its XML reports read, also when a crash cut them short
(report.py), and the runner that reads each report from a pipe the grader holds and re-runs,
one per process, the cases a crash, hang or GPU fault left without a result (testrun.py)."""
