"""Catch2 spec matching, as the rubric's group specs use it."""

import unittest

from grader.catch2.spec import name_spec, parse_spec, spec_matches

TAGS = ["[lab04]", "[gpu]", "[tiled]"]


class CatchSpecTest(unittest.TestCase):
    def test_adjacent_tags_all_required(self):
        self.assertTrue(spec_matches("[lab04][tiled]", "x", TAGS))
        self.assertFalse(spec_matches("[lab04][model]", "x", TAGS))

    def test_exclusion(self):
        self.assertFalse(spec_matches("~[gpu]", "x", TAGS))
        self.assertTrue(spec_matches("~[host]", "x", TAGS))
        self.assertTrue(spec_matches("[lab04]~[given]", "x", TAGS))
        self.assertFalse(spec_matches("exclude:[tiled]", "x", TAGS))

    def test_comma_is_or(self):
        self.assertTrue(spec_matches("[model],[tiled]", "x", TAGS))
        self.assertFalse(spec_matches("[model],[host]", "x", TAGS))

    def test_names_exact_wildcard_and_case(self):
        name = "The tiled kernel matches the reference"
        self.assertTrue(spec_matches("the TILED kernel matches the reference", name, []))
        self.assertTrue(spec_matches("The tiled*", name, []))
        self.assertTrue(spec_matches("*reference", name, []))
        self.assertTrue(spec_matches("*kernel*", name, []))
        self.assertFalse(spec_matches("The tiled", name, []))
        self.assertTrue(spec_matches('"The tiled kernel matches the reference"', name, []))

    def test_name_and_tag_together(self):
        self.assertTrue(spec_matches("The*[gpu]", "The one", TAGS))
        self.assertFalse(spec_matches("The*[host]", "The one", TAGS))

    def test_tags_ignore_case_and_brackets(self):
        self.assertTrue(spec_matches("[GPU]", "x", ["gpu"]))

    def test_empty_spec_matches_all(self):
        self.assertTrue(spec_matches("", "x", []))

    def test_name_spec_round_trips_special_characters(self):
        for name in ["Sizes, rows [and] columns", "a*b", "~tilde", 'quote " inside']:
            self.assertTrue(spec_matches(name_spec(name), name, []), name)
            self.assertFalse(spec_matches(name_spec(name), name + " more", []), name)

    def test_unterminated_tag_is_an_error(self):
        with self.assertRaises(ValueError):
            parse_spec("[lab04")


if __name__ == "__main__":
    unittest.main()
