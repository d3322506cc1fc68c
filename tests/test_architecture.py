"""Structural rules from ARCHITECTURE.md that code review alone would let slip."""

import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gpexplorer"
UI_LIBRARIES = {"panel", "param", "holoviews", "bokeh"}


def _imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module.split(".")[0]


@pytest.mark.parametrize("path", sorted(p for p in PACKAGE.rglob("*.py") if "ui" not in p.relative_to(PACKAGE).parts),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_inference_code_never_imports_ui_libraries(path):
    assert not (set(_imports(path)) & UI_LIBRARIES), f"{path.name} imports a UI library"


def test_ci_runs_exactly_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"<!-- test-command -->\s*```(?:bash|sh)?\n(.+?)\n```", readme, re.S)
    assert match, "README must mark its test command with <!-- test-command -->"
    command = match.group(1).strip()
    ci = (ROOT / ".ci" / "run").read_text()
    assert command in ci, f".ci/run does not run the README's test command: {command}"


def test_no_eval_or_exec_in_package():
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in {"eval", "exec"}, f"{path.name} calls {node.func.id}"


def test_app_files_stay_thin():
    for app in sorted((ROOT / "apps").glob("*.py")):
        lines = app.read_text().splitlines()
        assert len(lines) <= 40, f"{app.name} has {len(lines)} lines; pages belong in gpexplorer/ui/"
        assert ".servable(" in app.read_text(), f"{app.name} does not mark anything servable"
