"""Rebuild ``math_verify_cases.jsonl`` from a mirror of huggingface/Math-Verify.

Reads each listed test module at a pinned commit with ``git show`` and walks its syntax tree
(nothing of it is imported or run): every ``pytest.mark.parametrize`` whose argument names include
``gold`` and ``pred`` gives one row per literal tuple, with the expected verdict (``expected`` or
``result``), any extra parameters (``strict``, ``precision``, ...), the ``match_types`` the test
body passes, the source file, function and line. Rows whose tuple is not a literal are skipped
(none are at 5d148cf).

    python tests/data/math_verify_extract.py /path/to/Math-Verify [commit] > tests/data/math_verify_cases.jsonl
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys

FILES = ("test_all.py", "test_numina_cases.py", "test_open_thoughts.py", "test_boxed.py",
         "test_strict.py", "test_yujianll.py")
LICENCE = "Apache-2.0 (LICENCE of huggingface/Math-Verify; test_all.py's header says MIT)"


def _match_types(function: ast.FunctionDef) -> list[str] | None:
    for node in ast.walk(function):
        if isinstance(node, ast.keyword) and node.arg == "match_types":
            return ast.literal_eval(node.value)
    return None


def _parametrized(function: ast.FunctionDef) -> tuple[list[str], ast.List] | None:
    for decorator in function.decorator_list:
        if (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)
                and decorator.func.attr == "parametrize" and len(decorator.args) >= 2
                and isinstance(decorator.args[0], ast.Constant) and isinstance(decorator.args[1], ast.List)):
            names = [name.strip() for name in decorator.args[0].value.split(",")]
            if "gold" in names and "pred" in names:
                return names, decorator.args[1]
    return None


def cases(source: str, file: str, commit: str):
    """The (gold, pred, expected) rows of one test module's source."""
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef):
            continue
        found = _parametrized(function)
        if found is None:
            continue
        names, rows = found
        match_types = _match_types(function)
        for row in rows.elts:
            try:
                values = dict(zip(names, ast.literal_eval(row), strict=True))
            except ValueError:
                continue
            expected = values.pop("expected", values.pop("result", None))
            gold, pred = values.pop("gold"), values.pop("pred")
            yield {"gold": gold, "pred": pred, "expected": int(expected), "params": values,
                   "match_types": match_types, "file": f"tests/{file}", "test": function.name,
                   "line": row.lineno, "commit": commit}


def main(mirror: str, commit: str = "5d148cf") -> None:
    full = subprocess.run(["git", "-C", mirror, "rev-parse", commit], capture_output=True, text=True,
                          check=True).stdout.strip()
    print(json.dumps({"source": "https://github.com/huggingface/Math-Verify", "commit": full,
                      "licence": LICENCE, "files": [f"tests/{f}" for f in FILES]}))
    for file in FILES:
        source = subprocess.run(["git", "-C", mirror, "show", f"{full}:tests/{file}"], capture_output=True,
                                text=True, check=True).stdout
        for case in cases(source, file, full[:7]):
            print(json.dumps(case, ensure_ascii=False))


if __name__ == "__main__":
    main(*sys.argv[1:])
