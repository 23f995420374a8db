"""Course authoring: the course file grader/course.toml (course_file.py), the student
skeletons generated from the marked regions of the reference solutions (skeletonize.py), the
check that a committed skeleton fails what the student must write (expected_failures.py),
and the student copy: the committed tree without what only the grader may see (releases.py)
and the files it holds instead of the course's own (student_copy.py)."""
