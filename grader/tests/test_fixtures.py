"""The fixture recipes still apply to the solutions they edit, and change what they say."""

import unittest

from grader.paths import ROOT

from .lab_fixtures import LAB04, LAB05


@unittest.skipUnless((ROOT / "solutions").is_dir(), "the student copy has no solutions/")
class RecipesTest(unittest.TestCase):
    def test_every_recipe_applies(self):
        for fixtures in (LAB04, LAB05):
            for name, recipe in fixtures.recipes().items():
                with self.subTest(lab=fixtures.student_rel, fixture=name):
                    text = fixtures.student_text(name)
                    base = (fixtures.solution if recipe["base"] == "solution"
                            else fixtures.skeleton).read_text()
                    if recipe.get("replace") or recipe.get("append"):
                        self.assertNotEqual(text, base)

    def test_lab05_mistakes_remove_the_checks(self):
        no_bounds = LAB05.student_text("no_bounds")
        self.assertNotIn("(row < n && a_col < n)", no_bounds)
        self.assertNotIn("(row < rows && a_col < inner)", no_bounds)
        self.assertIn("const int phases = n / TILE;", no_bounds)
        branch = LAB05.student_text("barrier_in_branch")
        # the barriers now sit inside the branch some threads skip
        inside = branch.split("if (row < n && col < n) {", 1)[1].split("c[row * n + col]", 1)[0]
        self.assertIn("__syncthreads();", inside)


if __name__ == "__main__":
    unittest.main()
