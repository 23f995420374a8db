"""The stages of grading one lab, in order, each a function over typed data:

    build.reference   the grader's reference targets (its own code)
    build.student     the student's library, compiled alone in its jail, then linked
    static.check      the allow-lists on the student's object and preprocessed source
    tests.run         the test layers (host, then GPU) in the run jail -> TestRuns
    gpu_parts.run     memory safety, speed, profiler metrics (GPU only) -> measurements

and grader/scoring.py turns what they found into points. lab.grade_lab runs them for one
lab; grader/pipeline.py prepares the trees (prepare.py) and runs every lab. Each stage takes
a LabJob (job.py): what it needs to know, and nothing of the command line
(docs/architecture.md, "Stages and the data they pass")."""
