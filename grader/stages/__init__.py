"""The stages of grading one lab, in order, each a function over typed data:

    build.reference   the grader's reference targets (its own code)
    build.student     the student's library, compiled alone in its jail, then linked
    static.check      the allow-lists on the student's object and preprocessed source
    tests.run         the test layers (host, then GPU) in the run jail -> TestRuns
    lab.score_parts   every part of grader/parts/kinds.py measured and scored:
                      correctness, then (GPU only) memory safety, speed, metrics

and grader/scoring.py's formulas turn what they found into points. lab.grade_lab runs them for one
lab; grader/pipeline.py prepares the trees (prepare.py) and runs every lab. Each stage takes
a LabJob (job.py): what it needs to know, and nothing of the command line
(docs/architecture.md, "Stages and the data they pass")."""
