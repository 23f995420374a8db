"""The student copy: what goes in, what stays out (by path, by content, by lab), that it is
made from committed files only, and that it configures, builds and passes its own host tests
with no solutions/ present. The leaks are made in throwaway git repositories built from
this checkout's files."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from grader.course import answer_leaks, copy_files, head_tree, releases
from grader.paths import ROOT, discover_labs
from grader.tools import find_catch2, find_nlohmann_json, find_tool

HAVE_SOLUTIONS = (ROOT / "solutions").is_dir()
NEEDS = unittest.skipUnless(HAVE_SOLUTIONS and shutil.which("git"),
                            "needs solutions/ (not in a student copy) and git")
FOLDERS = ["01_warp_sizing", "02_coalescing", "03_shared_memory", "04_tiled_matmul",
           "05_boundary_checks", "06_bank_conflicts", "07_occupancy"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c",
                           "user.email=t@example.invalid", *args], check=True,
                          capture_output=True, text=True).stdout


def repository_like_this_checkout(dest: Path) -> Path:
    """A git repository with one commit of this checkout's files as they are now (tracked,
    and untracked but not ignored)."""
    names = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], capture_output=True, check=True
                           ).stdout.decode().split("\0")
    for rel in filter(None, names):
        src = ROOT / rel
        if src.is_file() and not src.is_symlink():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    git(dest.parent, "init", "-q", str(dest))
    git(dest, "add", "-A")
    git(dest, "commit", "-qm", "course")
    return dest


class RulesTest(unittest.TestCase):
    def test_what_goes_in_and_what_stays_out(self):
        inside = ["labs/04_tiled_matmul/tiled_matmul.cu", "labs/_template/topic.cu",
                  "handouts/figures/04_tiles.svg", "grader/tests/test_rubric.py",
                  "CMakePresets.json", "cmake/CmlLab.cmake",
                  "tools/gpu_check.sh", "docs/mainpage.md", "common/src/test_main.cpp",
                  "CHANGELOG.md"]
        outside = ["solutions/04_tiled_matmul/tiled_matmul.cu",
                   "solutions/04_tiled_matmul/tests/test_hidden.cpp",
                   "grader/tests/fixtures/lab04/recipes.json", "grader/tests/lab_fixtures.py",
                   "grader/tests/test_e2e_lab04.py", "grader/tests/test_fixtures.py",
                   ".github/CODEOWNERS", "notes/x.md", ".github/workflows/grade.yml",
                   ".github/workflows/grade-student-prs.yml", ".github/actionlint.yaml",
                   "grader/tests/adversarial/04_fair_reference/case.toml",
                   "grader/tests/adversarial/06_fair_xor_swizzle/labs/06_bank_conflicts/"
                   "bank_conflicts.cu", "grader/tests/test_adversarial.py",
                   "tools/adversarial_check.sh", "tools/grade_check.py",
                   "tools/pr_latency.py", "grader/tests/test_pr_latency.py",
                   "grader/__pycache__/x.pyc", "build/CMakeCache.txt", "CONTRIBUTING.md"]
        for rel in inside:
            self.assertTrue(copy_files.included(rel), rel)
        for rel in outside:
            self.assertFalse(copy_files.included(rel), rel)

    def test_which_lab_a_path_belongs_to(self):
        cases = {"labs/04_tiled_matmul/tests/matmul_check.hpp": "04_tiled_matmul",
                 "handouts/05_boundary_checks.md": "05_boundary_checks",
                 "handouts/figures/02_stride.svg": "02_coalescing",
                 "labs/_template/topic.cu": None, "common/src/bench.cpp": None,
                 "handouts/figures/09_new.svg": None, "README.md": None}
        for rel, lab in cases.items():
            self.assertEqual(copy_files.lab_of(rel, FOLDERS), lab, rel)

    def test_choosing_labs(self):
        self.assertEqual(copy_files.choose("", FOLDERS), FOLDERS)
        self.assertEqual(copy_files.choose("5,4,lab04", FOLDERS),
                         ["04_tiled_matmul", "05_boundary_checks"])
        with self.assertRaisesRegex(head_tree.ReleaseError, "no lab '9'"):
            copy_files.choose("9", FOLDERS)

    def test_lines_that_prove_nothing(self):
        for line in ("}", "return 0;", "// the answer is to add one", "#include <vector>",
                     "std::vector<std::uint32_t> addresses;", "d.size = prop.size;",
                     "const int tx = threadIdx.x;", "-------- ========"):
            self.assertTrue(answer_leaks._proves_nothing(line), line)
        for line in ("c[row * n + col] = acc + bias;", "const int i = (n + 31) / 32 * 32;"):
            self.assertFalse(answer_leaks._proves_nothing(line), line)


def _case_names(path: Path) -> set[str]:
    return set(re.findall(r'TEST_CASE\(\s*"([^"]+)"', path.read_text(errors="replace")))


@NEEDS
class LeakTest(unittest.TestCase):
    """Each way a solution could reach the students, made in a copy of this repository."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="cml-release-leak-"))
        cls.base = repository_like_this_checkout(cls.tmp / "base")
        cls.count = 0

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def clone(self) -> Path:
        type(self).count += 1
        repo = self.tmp / f"clone{self.count}"
        git(self.tmp, "clone", "-q", str(self.base), str(repo))
        return repo

    def commit(self, repo: Path) -> None:
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "change")

    def refused(self, repo: Path, **kw) -> str:
        """The release's message; checks that nothing was written."""
        out = self.tmp / f"out{self.count}"
        with self.assertRaises(head_tree.ReleaseError) as caught:
            releases.make_release(out, root=repo, **kw)
        self.assertFalse(out.exists() and any(out.iterdir()))
        return str(caught.exception)

    def answer(self, folder: str) -> str:
        return (self.base / "solutions" / folder / f"{folder[3:]}.cu").read_text()

    def test_the_real_tree_passes(self):
        plan = releases.plan_release(self.base)
        self.assertEqual((plan.problems, plan.leaks), ([], []))
        self.assertEqual(plan.labs, [lab.folder for lab in discover_labs(self.base)])
        secret = answer_leaks.secret_lines(head_tree.read_head(self.base))
        for folder in plan.labs:  # every lab's answer and hidden tests are searched for
            kinds = {s.kind for s in secret.values() if s.lab == folder}
            self.assertLessEqual({"answer", "hidden test"}, kinds, folder)
            self.assertLessEqual(kinds, {"answer", "hidden test", "grader-only"}, folder)

    def test_a_solution_pasted_into_a_handout(self):
        repo = self.clone()
        with open(repo / "handouts/02_coalescing.md", "a") as f:
            f.write("\n```cuda\n" + self.answer("04_tiled_matmul") + "```\n")
        self.commit(repo)
        message = self.refused(repo)
        self.assertIn("handouts/02_coalescing.md: ", message)
        self.assertIn("solutions/04_tiled_matmul/tiled_matmul.cu", message)
        # found even when lab 04 is not released, and in a lab's own handout
        self.assertTrue(releases.plan_release(repo, labs="02").leaks)

    def test_one_answer_line_quoted_in_its_own_handout(self):
        repo = self.clone()
        secret = answer_leaks.secret_lines(head_tree.read_head(repo))
        line = next(line for line, s in secret.items()
                    if s.lab == "02_coalescing" and s.kind == "answer")
        with open(repo / "handouts/02_coalescing.md", "a") as f:
            f.write(f"\nThe trick is `{line}`.\n")
        self.commit(repo)
        self.assertIn(f"handouts/02_coalescing.md: {line!r}", self.refused(repo))

    def test_an_answer_file_in_a_lab_folder(self):
        repo = self.clone()
        (repo / "labs/04_tiled_matmul/answer.cu").write_text(self.answer("04_tiled_matmul"))
        message = self.refused(repo)
        self.assertIn("labs/04_tiled_matmul/answer.cu (untracked)", message)
        self.commit(repo)  # committed, it is found by its content
        self.assertIn("labs/04_tiled_matmul/answer.cu: ", self.refused(repo))
        self.assertTrue(releases.plan_release(repo, labs="01").ok)  # lab 04 not released

    def test_a_modified_tracked_file(self):
        repo = self.clone()
        with open(repo / "labs/04_tiled_matmul/baseline.cu", "a") as f:
            f.write("// edited, not committed\n")
        self.assertIn("labs/04_tiled_matmul/baseline.cu (modified)", self.refused(repo))
        git(repo, "add", "labs/04_tiled_matmul/baseline.cu")  # staged is not committed either
        self.assertIn("labs/04_tiled_matmul/baseline.cu (modified)", self.refused(repo))

    def test_the_copy_is_made_from_head(self):
        repo = self.clone()
        (repo / "grader/tests/data/scratch.txt").write_text("not committed\n")
        (repo / "notes.txt").write_text("outside the released paths: no matter\n")
        self.assertIn("grader/tests/data/scratch.txt (untracked)", self.refused(repo))
        (repo / "grader/tests/data/scratch.txt").unlink()
        made = releases.make_release(self.tmp / "from-head", root=repo, commit=False)
        self.assertNotIn("notes.txt", made.files)
        self.assertEqual((self.tmp / "from-head/grader/course/releases.py").read_bytes(),
                         (self.base / "grader/course/releases.py").read_bytes())

    def test_a_solution_copied_over_the_skeleton(self):
        repo = self.clone()
        shutil.copy(repo / "solutions/04_tiled_matmul/tiled_matmul.cu",
                    repo / "labs/04_tiled_matmul/tiled_matmul.cu")
        self.commit(repo)
        message = self.refused(repo)
        self.assertIn("labs/04_tiled_matmul/tiled_matmul.cu is not the skeleton", message)
        self.assertIn("labs/04_tiled_matmul/tiled_matmul.cu: ", message)

    def test_an_answer_in_another_labs_given_code(self):
        repo = self.clone()
        with open(repo / "labs/06_bank_conflicts/baseline.cu", "a") as f:
            f.write(self.answer("04_tiled_matmul"))
        with open(repo / "common/src/bench.cpp", "a") as f:
            f.write(self.answer("07_occupancy"))
        self.commit(repo)
        message = self.refused(repo, labs="06")
        self.assertIn("labs/06_bank_conflicts/baseline.cu: ", message)
        self.assertIn("common/src/bench.cpp: ", message)

    def test_a_hidden_test_copied_into_the_public_tests(self):
        repo = self.clone()
        hidden = repo / "solutions/04_tiled_matmul/tests/test_hidden.cpp"
        name = sorted(_case_names(hidden))[0]
        with open(repo / "labs/04_tiled_matmul/tests/test_tiled_matmul.cpp", "a") as f:
            f.write(hidden.read_text())
        self.commit(repo)
        self.assertIn(f'names the hidden test case "{name}"', self.refused(repo))

    def test_lab_05_goes_out_only_with_or_after_lab_04(self):
        self.assertEqual(copy_files.declared_answers(head_tree.read_head(self.base),
                                                   "05_boundary_checks"), ["04_tiled_matmul"])
        message = self.refused(self.base, labs="05")
        self.assertIn("labs/05_boundary_checks holds the answer of 04_tiled_matmul", message)
        self.assertIn("--labs 04,05", message)
        self.assertTrue(releases.plan_release(self.base, labs="04,05").ok)
        self.assertTrue(releases.plan_release(self.base, labs="05", earlier="04").ok)
        # without its declaration, lab 04's answer in lab 05's baseline is a leak
        repo = self.clone()
        rubric = repo / "labs/05_boundary_checks/grading.toml"
        text = rubric.read_text()
        rubric.write_text(text[:text.index("[release]")])
        self.commit(repo)
        leaks = releases.plan_release(repo, labs="04,05").leaks
        self.assertTrue(leaks)
        self.assertTrue(all(leak.startswith("labs/05_boundary_checks/baseline.cu: ")
                            for leak in leaks), leaks)

    def test_the_declaration_is_read_from_grading_toml(self):
        repo = self.clone()
        rubric = repo / "labs/06_bank_conflicts/grading.toml"
        rubric.write_text(rubric.read_text() + '\n[release]\ncontains_answers_of = ["03"]\n')
        self.commit(repo)
        tree = head_tree.read_head(repo)
        self.assertEqual(copy_files.declared_answers(tree, "06_bank_conflicts"),
                         ["03_shared_memory"])
        self.assertIn("holds the answer of 03_shared_memory",
                      "\n".join(releases.plan_release(repo, labs="06", tree=tree).problems))
        rubric.write_text(rubric.read_text().replace('["03"]', '"03"'))
        self.commit(repo)
        with self.assertRaisesRegex(head_tree.ReleaseError, "must be an array of lab folders"):
            copy_files.declared_answers(head_tree.read_head(repo), "06_bank_conflicts")

    def test_a_staged_release_holds_only_its_labs(self):
        out = self.tmp / "staged"
        made = releases.make_release(out, root=self.base, labs="01,02")
        self.assertEqual(made.labs, ["01_warp_sizing", "02_coalescing"])
        files = sorted(str(p.relative_to(out)) for p in out.rglob("*")
                       if p.is_file() and ".git" not in p.relative_to(out).parts)
        self.assertEqual(sorted(made.files), files)
        labs = {rel.split("/")[1] for rel in files if rel.startswith("labs/")}
        self.assertEqual(labs, {"01_warp_sizing", "02_coalescing", "_template"})
        handouts = [rel for rel in files if rel.startswith("handouts/")]
        self.assertTrue(handouts)
        for rel in handouts:
            self.assertRegex(rel, r"^handouts/(figures/)?0[12]_")
        self.assertIn("common/src/bench.cpp", files)
        self.assertIn("grader/course/releases.py", files)
        log = git(out, "log", "--format=%s")
        self.assertIn("labs 01_warp_sizing, 02_coalescing", log)


@NEEDS
class ReleaseTest(unittest.TestCase):
    """The whole release of a repository like this checkout."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="cml-release-"))
        cls.tmp.chmod(0o755)
        cls.repo = repository_like_this_checkout(cls.tmp / "course")
        cls.out = cls.tmp / "copy"
        cls.made = releases.make_release(cls.out, root=cls.repo)
        cls.files = sorted(str(p.relative_to(cls.out)) for p in cls.out.rglob("*")
                           if p.is_file() and ".git" not in p.relative_to(cls.out).parts)
        cls.log = git(cls.out, "log", "--oneline")
        cls.status = git(cls.out, "status", "--porcelain")
        # The copy's own grader tests run in the background from here on: they spend much of
        # their minute waiting on timeouts and sleeps, which the copy's build below fills.
        cls.suite_log = cls.tmp / "copy-suite.log"
        with open(cls.suite_log, "wb") as log:
            cls.suite = subprocess.Popen(
                [sys.executable, "-m", "unittest", "discover", "-s", "grader/tests", "-t", "."],
                cwd=cls.out, stdout=log, stderr=subprocess.STDOUT,
                env=dict(os.environ, NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1"))

    @classmethod
    def tearDownClass(cls):
        if cls.suite.poll() is None:
            cls.suite.kill()
            cls.suite.wait()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_no_solution_or_hidden_test_by_path(self):
        self.assertEqual(sorted(self.made.files), self.files)
        for rel in self.files:
            self.assertFalse(rel.startswith("solutions"), rel)
            self.assertNotIn("hidden", Path(rel).name, rel)
            self.assertNotIn("fixtures", rel)
        for lab in discover_labs(self.repo):
            self.assertIn(f"labs/{lab.folder}/{lab.topic}.cu", self.files)
            self.assertIn(f"labs/{lab.folder}/grading.toml", self.files)
            self.assertIn(f"handouts/{lab.folder}.md", self.files)
        self.assertIn("labs/_template/CMakeLists.txt", self.files)
        self.assertIn("CHANGELOG.md", self.files)  # for the students too
        self.assertNotIn("CONTRIBUTING.md", self.files)  # how to work on the course: staff only

    def test_no_solution_or_hidden_test_by_content(self):
        secret = answer_leaks.secret_lines(head_tree.read_head(self.repo))
        hidden_names = set()
        for path in (self.repo / "solutions").rglob("*.c*"):
            if "tests" in path.parts:
                hidden_names |= _case_names(path)
        public_names = set()
        for path in (self.repo / "labs").rglob("*.c*"):
            public_names |= _case_names(path)
        hidden_names -= public_names
        self.assertTrue(hidden_names)
        allowed = copy_files.declared_answers(head_tree.read_head(self.repo), "05_boundary_checks")
        texts = {}
        for rel in self.files:
            try:
                texts[rel] = (self.out / rel).read_text()
            except UnicodeDecodeError:
                continue
        # a line a lab's given code shares with its own answer (a baseline's statement)
        shared = {line for line, s in secret.items() if s.kind == "answer" and any(
            line in text for rel, text in texts.items() if rel.startswith(f"labs/{s.lab}/"))}
        for rel, text in texts.items():
            leaked = [line for line, s in secret.items() if line in text and line not in shared
                      and not (rel.startswith("labs/05_boundary_checks/") and s.lab in allowed)]
            self.assertEqual(leaked, [], rel)
            named = [n for n in hidden_names if f'"{n}"' in text]
            self.assertEqual(named, [], f"{rel} names hidden test cases")

    def test_skeletons_are_the_committed_ones(self):
        for lab in discover_labs(self.repo):
            self.assertEqual((self.out / "labs" / lab.folder / f"{lab.topic}.cu").read_bytes(),
                             lab.student_file.read_bytes())

    def test_modes_are_kept(self):
        for rel in self.files:
            self.assertEqual(os.access(self.out / rel, os.X_OK),
                             os.access(self.repo / rel, os.X_OK), rel)

    def test_a_fresh_git_repository_with_one_clean_commit(self):
        self.assertEqual(len(self.log.splitlines()), 1)
        self.assertEqual(self.status, "")  # as made, before its own tests ran in it
        self.assertEqual(sorted(git(self.out, "ls-files").split()), self.files)

    def test_refuses_a_folder_that_is_not_empty(self):
        with self.assertRaisesRegex(head_tree.ReleaseError, "not empty"):
            releases.make_release(self.out, root=self.repo)

    def test_the_copys_grader_tests_pass_without_solutions(self):
        try:
            returncode = self.suite.wait(timeout=900)
        except subprocess.TimeoutExpired:
            self.suite.kill()
            self.suite.wait()
            returncode = None
        output = self.suite_log.read_text(errors="replace")
        self.assertEqual(returncode, 0, output[-3000:])
        self.assertRegex(output, r"\nRan \d+ tests? in ")

    @unittest.skipIf(not (find_tool("cmake") and find_tool("nvcc") and find_catch2()[0]
                          and find_nlohmann_json()[0]),
                     "configuring the copy needs cmake, nvcc, Catch2 and nlohmann-json")
    def test_the_copy_configures_builds_and_passes_its_host_tests(self):
        build = self.tmp / "build"
        env = dict(os.environ)
        nvcc = find_tool("nvcc")
        env["PATH"] = env.get("PATH", "") + os.pathsep + os.path.dirname(nvcc)
        cmd = ["cmake", "-S", str(self.out), "-B", str(build), "-DCML_LABS=04_tiled_matmul"]
        if find_tool("ninja"):
            cmd += ["-G", "Ninja"]
        configure = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
        self.assertEqual(configure.returncode, 0, configure.stdout[-2000:] + configure.stderr)
        listed = subprocess.run(["ctest", "--test-dir", str(build), "-N"], capture_output=True,
                                text=True, timeout=120).stdout
        self.assertNotIn("solution", listed)
        self.assertNotIn("skeleton.", listed)
        # one compile at a time: the copy's grader tests run beside it (setUpClass)
        built = subprocess.run(["cmake", "--build", str(build), "-j", "1"],
                               capture_output=True, text=True, timeout=1200, env=env)
        self.assertEqual(built.returncode, 0, built.stdout[-3000:] + built.stderr[-2000:])
        # the default preset's selection (everything but `student`), without the slow ones
        # checked elsewhere: the grader's unit tests (above) and Doxygen
        tests = subprocess.run(["ctest", "--test-dir", str(build), "-LE", "^student$", "-E",
                                r"^(grader\.unit\..*|docs\.build)$", "--output-on-failure",
                                "--no-tests=error"], capture_output=True, text=True,
                               timeout=600, env=env)
        self.assertEqual(tests.returncode, 0, tests.stdout[-3000:] + tests.stderr)


if __name__ == "__main__":
    unittest.main()
