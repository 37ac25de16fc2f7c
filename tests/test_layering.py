"""What the import contracts cannot see. `lint-imports` (pyproject.toml, run by the test command) checks
the import rules of docs/ARCHITECTURE.md on the whole import graph, lazy imports included; these tests
add the ways in that are not import statements: a module named to ``importlib`` or a dotted path in a
string (``mock.patch``, ``import_string``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def python_files(target: str) -> list[Path]:
    path = ROOT / target
    return [path] if path.is_file() else sorted(path.rglob("*.py"))


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
            modules.update(f"{node.module}.{alias.name}" for alias in node.names)
    return modules


BACKEND_FILES = python_files("scheduler") + python_files("admission")


def _is_gangweb_module(text: str) -> bool:
    """``gangweb`` or a dotted path into it (``gangweb.events.publish``), but not ``gangweb.io/...`` labels or
    the policy called ``gangweb``: the first name after ``gangweb.`` must be a module or package of it."""
    root, _, rest = text.partition(".")
    if root != "gangweb" or not rest:
        return False
    first = rest.split(".")[0]
    return first.isidentifier() and (
        (ROOT / "gangweb" / f"{first}.py").is_file() or (ROOT / "gangweb" / first).is_dir()
    )


IMPORTERS = {"import_module", "__import__", "find_spec", "import_string", "importorskip"}


def gangweb_references(path: Path) -> list[str]:
    """Every way ``path`` reaches the project package: import statements (at module level or lazily in a
    function), a module named to an importer (``importlib.import_module("gangweb")``), or a dotted
    ``gangweb.`` path in a string (for ``import_string``, ``mock.patch`` and the like)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[0] == "gangweb"]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == "gangweb":
                found.append(node.module)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            target = node.args[0].value
            if name in IMPORTERS and isinstance(target, str) and target.split(".")[0] == "gangweb":
                found.append(f"{name}({target!r})")
        elif (
            isinstance(node, ast.Constant) and isinstance(node.value, str) and _is_gangweb_module(node.value)
        ):
            found.append(repr(node.value))
    return sorted(set(found))


@pytest.mark.parametrize("path", BACKEND_FILES, ids=[str(f.relative_to(ROOT)) for f in BACKEND_FILES])
def test_the_pipeline_and_the_webhook_never_import_the_project(path):
    """The event bus sits low: gangweb hands its publishers in at startup (gangweb/apps.py), so nothing
    under scheduler/ or admission/ imports gangweb, at module level, lazily or through importlib."""
    reached = gangweb_references(path)
    assert not reached, (
        f"{path.relative_to(ROOT)} reaches the project package: {reached}; see docs/ARCHITECTURE.md"
    )


def test_the_project_check_sees_every_way_in(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import importlib\n"
        "def later():\n"
        "    from gangweb.events import publish\n"
        "    import gangweb.metrics\n"
        "    importlib.import_module('gangweb')\n"
        "    return 'gangweb.events.send', 'gangweb.io/preemption-policy', 'gangweb'\n"
    )
    assert gangweb_references(sample) == [
        "'gangweb.events.send'",
        "gangweb.events",
        "gangweb.metrics",
        "import_module('gangweb')",
    ]


# ----- product code never imports the scaffolding: the Kubernetes API test server, benchmarks, test builders

# Test tooling, benchmarks and test builders (``manage.py bench`` names its modules as data, imported on demand).
SCAFFOLDING = ("kubetestserver", "bench", "testkit")
PRODUCT_FILES = python_files("scheduler") + python_files("admission") + python_files("gangweb")


def modules_named_to_importlib(path: Path) -> set[str]:
    """String literals handed to ``importlib.import_module``/``__import__`` (imports the AST above cannot see)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    named = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                named.add(node.args[0].value)
    return named


@pytest.mark.parametrize("path", PRODUCT_FILES, ids=[str(f.relative_to(ROOT)) for f in PRODUCT_FILES])
def test_product_code_does_not_import_the_scaffolding(path):
    modules = imported_modules(path) | modules_named_to_importlib(path)
    reached = sorted(m for m in modules if m.split(".")[0] in SCAFFOLDING)
    assert not reached, (
        f"{path.relative_to(ROOT)} imports {reached}: test tooling and benchmarks are scaffolding; "
        "product code must not depend on them (docs/ARCHITECTURE.md)"
    )


def test_the_scaffolding_rule_sees_a_violation(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import importlib\nfrom kubetestserver.store import ObjectStore\nfrom bench.engine import HELP\n"
        "from testkit.synthetic import NOW\n"
        "importlib.import_module('kubetestserver.testserver')\n"
    )
    assert {"kubetestserver.store", "kubetestserver.testserver", "bench.engine", "testkit.synthetic"} <= {
        m for m in imported_modules(bad) | modules_named_to_importlib(bad) if m.startswith(SCAFFOLDING)
    }
    assert len(PRODUCT_FILES) > 100 and not any("bench" in f.parts for f in PRODUCT_FILES)
