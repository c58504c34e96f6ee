"""reagent's bridge to the Berkeley Function Calling Leaderboard (PyPI `bfcl-eval`, pinned in
requirements.txt beside this file; evals/README.md, "BFCL").

Two uses, one file:

- `bridge.py serve`: what `reagent eval --bfcl` talks to, one JSON object per line on stdin and
  stdout. `load` converts BFCL's entries into reagent's shape (the queries of each turn and the
  function docs as caller tools, with BFCL's own conversion); `execute` runs a multi-turn entry's
  calls on BFCL's own Python backends (GorillaFileSystem, TwitterAPI, ...), whose state lives
  here per entry; `score` hands the run's calls to BFCL's own AST or multi-turn checker.
- `bridge.py handler ...`: BFCL's own OpenAI-compatible handler (`bfcl generate` and
  `bfcl evaluate`) on the same entries, against an OpenAI-compatible server such as llama.cpp's,
  side by side with reagent.

Both register the local model under a name of their own (BFCL only knows hosted models by name);
the handler class, the prompts and the checkers are BFCL's, unchanged.
"""

import argparse
import contextlib
import json
import os
import sys
import tempfile

# The categories `reagent eval --bfcl` knows how to run: one call batch per single-turn entry,
# several turns with executed calls for the multi-turn ones.
SINGLE_TURN = ("simple_python", "multiple", "parallel", "parallel_multiple")
MULTI_TURN = ("multi_turn_base",)
CATEGORIES = SINGLE_TURN + MULTI_TURN

# Registry names: BFCL keys results and checkers by them (no `_`: BFCL reads it as `/`).
REAGENT_NAME = "reagent"
HANDLER_FC = "local-FC"
HANDLER_PROMPT = "local-prompt"
# The instances `execute` drives during a run; the checker builds its own ("<name>_eval").
RUN_STATE_NAME = "reagent-run"


def category_of(entry_id):
    """`multi_turn_base_3` -> `multi_turn_base`."""
    return entry_id.rsplit("_", 1)[0]


def turn_query(messages):
    """One BFCL turn (a list of chat messages) as one query text."""
    return "\n\n".join(m["content"] for m in messages if m.get("content"))


def as_fc_result(calls):
    """Calls `[{name, arguments}]` in the shape BFCL's FC handlers record: `[{name: args}]`."""
    return [{c["name"]: c["arguments"]} for c in calls]


def turn_results(turns):
    """A run's turns, each a list of steps (`{"calls": [...]}` or `{"text": ...}`), in the shape
    BFCL's multi-turn runner takes: per turn, per step, the FC result or the reply's text."""
    return [
        [as_fc_result(s["calls"]) if s.get("calls") else s.get("text", "") for s in turn]
        for turn in turns
    ]


def single_turn_result(turns):
    """What a single-turn entry is scored on: the first reply, its calls or its text."""
    first = turns[0][0] if turns and turns[0] else {"text": ""}
    return as_fc_result(first["calls"]) if first.get("calls") else first.get("text", "")


def register(names):
    """Adds the local model to BFCL's registry under `names` ({name: is_fc}), with BFCL's own
    OpenAI Chat Completions handler and the name conversion OpenAI-style tools need."""
    from bfcl_eval.constants.model_config import MODEL_CONFIG_MAPPING, ModelConfig
    from bfcl_eval.model_handler.api_inference.openai_completion import (
        OpenAICompletionsHandler,
    )

    for name, is_fc in names.items():
        MODEL_CONFIG_MAPPING[name] = ModelConfig(
            model_name=os.environ.get("BFCL_MODEL", name),
            display_name=name,
            url="",
            org="",
            license="",
            model_handler=OpenAICompletionsHandler,
            is_fc_model=is_fc,
            underscore_to_dot=is_fc,
        )


class Bridge:
    """The state of `serve`: the loaded entries and the checker's handler."""

    def __init__(self):
        from bfcl_eval.eval_checker.eval_runner import get_handler

        register({REAGENT_NAME: True})
        # The checker's handler builds an OpenAI client it never calls: it needs a key.
        os.environ.setdefault("OPENAI_API_KEY", "unused")
        self.handler = get_handler(REAGENT_NAME)
        self.entries = {}

    def load(self, categories, limit):
        from bfcl_eval.constants.enums import ModelStyle
        from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
        from bfcl_eval.model_handler.utils import convert_to_tool
        from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry

        out = []
        for category in categories:
            if category not in CATEGORIES:
                raise ValueError(f"unknown category {category!r}: one of {', '.join(CATEGORIES)}")
            # As BFCL's generation sees them (language hint included) and as its checker does.
            prompts = load_dataset_entry(category)[:limit]
            plain = load_dataset_entry(
                category, include_prereq=False, include_language_specific_hint=False
            )[:limit]
            answers = load_ground_truth_entry(category)[:limit]
            for prompt, checked, answer in zip(prompts, plain, answers):
                tools = convert_to_tool(
                    prompt["function"], GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS
                )
                self.entries[prompt["id"]] = {"prompt": checked, "answer": answer}
                out.append(
                    {
                        "id": prompt["id"],
                        "category": category,
                        "multi_turn": category in MULTI_TURN,
                        "turns": [turn_query(t) for t in prompt["question"]],
                        "tools": tools,
                    }
                )
        return {"entries": out}

    def execute(self, entry_id, calls):
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import (
            execute_multi_turn_func_call,
        )
        from bfcl_eval.model_handler.utils import convert_to_function_call

        prompt = self.entries[entry_id]["prompt"]
        outputs = []
        for call in calls:
            # One call at a time, so that arguments that are not JSON fail alone.
            try:
                text = convert_to_function_call([{call["name"]: call["arguments"]}])
            except Exception as e:  # noqa: BLE001 - the model's text, reported back to it
                outputs.append(f"Error: the arguments are not a JSON object: {e}")
                continue
            results, _ = execute_multi_turn_func_call(
                text,
                prompt.get("initial_config", {}),
                prompt["involved_classes"],
                RUN_STATE_NAME,
                entry_id,
                long_context=False,
                is_evaL_run=False,
            )
            outputs.extend(results)
        return {"outputs": outputs}

    def score(self, entry_id, turns):
        from bfcl_eval.constants.enums import Language, ReturnFormat
        from bfcl_eval.eval_checker.eval_runner import (
            _evaluate_single_ast_entry,
            _evaluate_single_multi_turn_entry,
        )

        held = self.entries[entry_id]
        prompt = json.loads(json.dumps(held["prompt"]))
        category = category_of(entry_id)
        if category in MULTI_TURN:
            verdict = _evaluate_single_multi_turn_entry(
                self.handler,
                entry_id,
                turn_results(turns),
                held["answer"]["ground_truth"],
                prompt,
                REAGENT_NAME,
                category,
            )
        else:
            verdict = _evaluate_single_ast_entry(
                self.handler,
                entry_id,
                single_turn_result(turns),
                held["answer"]["ground_truth"],
                prompt,
                REAGENT_NAME,
                category,
                language=Language.PYTHON,
                return_format=ReturnFormat.PYTHON,
            )
        return {"valid": bool(verdict["valid"]), "reason": brief_error(verdict)}


def brief_error(verdict):
    """The checker's reason in one line (its verdicts nest lists and dicts)."""
    if verdict.get("valid"):
        return None
    error = verdict.get("error")
    if isinstance(error, dict):
        error = error.get("error_message", error)
    if isinstance(error, list):
        error = "; ".join(str(e) for e in error)
    return str(error)[:300]


def serve():
    """The JSON-lines loop: one request per line, one answer per line; BFCL's own prints go to
    stderr so that stdout carries only answers."""
    out = sys.stdout
    # BFCL writes result and score folders under its project root at import: not in the venv.
    os.environ.setdefault("BFCL_PROJECT_ROOT", tempfile.mkdtemp(prefix="reagent-bfcl-"))
    with contextlib.redirect_stdout(sys.stderr):
        bridge = Bridge()
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                req = json.loads(line)
                op = req.get("op")
                if op == "load":
                    answer = bridge.load(req["categories"], req["limit"])
                elif op == "execute":
                    answer = bridge.execute(req["id"], req["calls"])
                elif op == "score":
                    answer = bridge.score(req["id"], req["turns"])
                else:
                    answer = {"error": f"unknown op {op!r}"}
            except Exception as e:  # noqa: BLE001 - every failure is an answer, never a hang
                answer = {"error": f"{type(e).__name__}: {e}"}
            out.write(json.dumps(answer) + "\n")
            out.flush()


def handler(args):
    """BFCL's own `generate` then `evaluate` for the first `--limit` entries of each category,
    with the local model registered as `local-FC` (function calling) and `local-prompt` (BFCL's
    prompting mode); results and scores under `--work`."""
    os.environ["BFCL_PROJECT_ROOT"] = args.work
    os.environ.setdefault("OPENAI_API_KEY", "local")
    os.environ["OPENAI_BASE_URL"] = args.base_url
    os.makedirs(args.work, exist_ok=True)
    from bfcl_eval.utils import load_dataset_entry

    ids = {c: [e["id"] for e in load_dataset_entry(c)[: args.limit]] for c in args.categories}
    with open(os.path.join(args.work, "test_case_ids_to_generate.json"), "w") as f:
        json.dump(ids, f)
    register({HANDLER_FC: True, HANDLER_PROMPT: False})
    from bfcl_eval.__main__ import cli

    models = ",".join(args.models)
    steps = [
        ["generate", "--model", models, "--run-ids", "--temperature", str(args.temperature)],
        ["evaluate", "--model", models, "--test-category", ",".join(args.categories),
         "--partial-eval"],
    ]
    for step in steps:
        try:
            cli(step, standalone_mode=False)
        except SystemExit as e:
            if e.code:
                raise


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help="the JSON-lines bridge `reagent eval --bfcl` runs")
    h = sub.add_parser("handler", help="BFCL's own handler on the same entries")
    h.add_argument("--base-url", required=True, help="the OpenAI-compatible /v1 URL")
    h.add_argument("--categories", default=",".join(CATEGORIES))
    h.add_argument("--limit", type=int, required=True, help="the first N entries of each")
    h.add_argument("--models", default=HANDLER_FC, help=f"{HANDLER_FC} and/or {HANDLER_PROMPT}")
    h.add_argument("--temperature", type=float, default=0.0)
    h.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "reagent-bfcl"))
    args = parser.parse_args()
    if args.command == "serve":
        serve()
    else:
        args.categories = [c for c in args.categories.split(",") if c]
        args.models = [m for m in args.models.split(",") if m]
        handler(args)


if __name__ == "__main__":
    main()
