"""`python3 -m grader.tests.fake_batch ARGS...`: `python3 -m grader ARGS...` with a fake grade,
for tests of the batch's machinery (test_batch_interrupts): no compiler, no GPU, seconds.

Every process of the batch is this one (the tasks' command is rewritten to run it too), so
the batch, its task processes, the pipeline's signal handling and the stamps are the real
ones; only `pipeline.grade`, the grade of one submission, is replaced. The fake grade takes
$CML_FAKE_GRADE_S seconds (default 1) and gives the points written in the submission's
points.txt (default 0), out of 100, to its first lab. It appends "start" and "done" lines to
the submission's grades.log, so a test sees which grades ran to their end.

$CML_FAKE_POKE_WORKER_S: that many seconds after the batch has started its task threads,
SIGINT is sent to one of those threads alone (signal.pthread_kill), as the kernel may do
with a signal sent to the process.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

from grader import pipeline
from grader.batch import schedule
from grader.result import GradeResult, LabResult

GRADE_S = "CML_FAKE_GRADE_S"
POKE_WORKER_S = "CML_FAKE_POKE_WORKER_S"


def fake_grade(opts: pipeline.Options, result: GradeResult) -> None:
    folder = Path(opts.submission)
    log = folder / "grades.log"
    with log.open("a") as f:
        f.write(f"start {os.getpid()}\n")
    time.sleep(float(os.environ.get(GRADE_S, "1")))
    points_file = folder / "points.txt"
    points = float(points_file.read_text()) if points_file.is_file() else 0.0
    lab = opts.labs[0].folder if opts.labs else "01_warp_sizing"
    result.labs.append(LabResult(lab, "Fake", points, 100.0, [], []))
    result.points, result.max_points = points, 100.0
    with log.open("a") as f:
        f.write(f"done {os.getpid()}\n")


def task_command(out_dir: Path, index: int | str, work_dir: Path | None = None) -> list[str]:
    real = schedule_task_command(out_dir, index, work_dir)
    return [sys.executable, "-m", "grader.tests.fake_batch"] + real[3:]  # after "-m grader"


schedule_task_command = schedule.task_command


def _poke_a_worker(after: float) -> None:
    start = time.monotonic()
    while True:
        workers = [t for t in threading.enumerate()
                   if t.name.startswith("ThreadPoolExecutor") and t.ident is not None]
        if workers and time.monotonic() - start >= after:
            signal.pthread_kill(workers[0].ident or 0, signal.SIGINT)
            return
        time.sleep(0.02)


def main(argv: list[str]) -> int:
    setattr(pipeline, "grade", fake_grade)
    schedule.task_command = task_command
    poke = os.environ.get(POKE_WORKER_S)
    if poke and "--task" not in argv:
        threading.Thread(target=_poke_a_worker, args=(float(poke),), daemon=True).start()
    from grader.__main__ import main as grader_main
    return grader_main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
