"""The bridge's own conversions, without bfcl-eval: `python3 -m unittest evals/bfcl/test_bridge.py`
(run by .ci/run). What BFCL does with them is proven by the real runs (evals/README.md, "BFCL")."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bridge  # noqa: E402

CD = {"call_id": "c1", "name": "cd", "arguments": '{"folder": "document"}'}
LS = {"call_id": "c2", "name": "ls", "arguments": "{}"}


class Conversions(unittest.TestCase):
    def test_a_turn_is_its_messages_text(self):
        turn = [{"role": "user", "content": "Move it."}, {"role": "user", "content": "Now."}]
        self.assertEqual(bridge.turn_query(turn), "Move it.\n\nNow.")

    def test_calls_take_the_shape_of_bfcls_fc_results(self):
        self.assertEqual(
            bridge.as_fc_result([CD, LS]),
            [{"cd": '{"folder": "document"}'}, {"ls": "{}"}],
        )

    def test_a_single_turn_entry_is_scored_on_its_first_reply(self):
        self.assertEqual(
            bridge.single_turn_result([[{"calls": [CD]}, {"text": "later"}]]),
            [{"cd": '{"folder": "document"}'}],
        )
        self.assertEqual(bridge.single_turn_result([[{"text": "no call"}]]), "no call")
        self.assertEqual(bridge.single_turn_result([]), "")

    def test_multi_turn_results_keep_turns_and_replies(self):
        turns = [[{"calls": [CD, LS]}, {"text": "Done."}], [{"text": ""}]]
        self.assertEqual(
            bridge.turn_results(turns),
            [[[{"cd": '{"folder": "document"}'}, {"ls": "{}"}], "Done."], [""]],
        )

    def test_categories_and_ids(self):
        self.assertEqual(bridge.category_of("multi_turn_base_12"), "multi_turn_base")
        self.assertEqual(bridge.category_of("simple_python_0"), "simple_python")
        self.assertIn("parallel_multiple", bridge.SINGLE_TURN)

    def test_the_checkers_reason_is_one_line(self):
        self.assertIsNone(bridge.brief_error({"valid": True}))
        self.assertEqual(
            bridge.brief_error({"valid": False, "error": ["wrong type", "missing x"]}),
            "wrong type; missing x",
        )
        self.assertEqual(
            bridge.brief_error({"valid": False, "error": {"error_message": "empty turn"}}),
            "empty turn",
        )


if __name__ == "__main__":
    unittest.main()
