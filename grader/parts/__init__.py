"""The kinds of graded part, one module each (docs/architecture.md, "Parts"): what a part
is (`base`: the Part protocol and the context its stage hands it), the gates that stop a lab
(`gates`: Build, Static checks) and the parts a rubric scores, in report order:
`correctness`, `memory_safety`, `performance`, `stretch`, `metric`. `kinds` (the registry) lists them
once; the stages loop over it, and grader/scoring.py keeps the formulas and the totals."""
