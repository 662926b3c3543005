"""Package boundaries, in layers: constructs_lib.karpenter (the reusable Karpenter construct) < constructs_lib (the
app-only constructs beside it) < karpenter_stack (the app) < tooling (the commands and checks around it: review,
transition matrix, lifecycle model, CRD schemas and CEL rules) < tests. A layer imports only the layers below it, no module imports itself back through others, nothing patches sys.path,
no CDK-generated logical id is written out in the code, and no function of the app and the library is longer than
60 lines."""

from __future__ import annotations

import ast
import functools
import re
import tomllib
from pathlib import Path

from tests.conftest import ROOT
from tests.sources import walked

# Lowest first: each imports only those before it. A module's layer is the longest that names it or its package.
LAYERS = ("constructs_lib.karpenter", "constructs_lib", "karpenter_stack", "tooling", "tests")
TOP = ("constructs_lib", "karpenter_stack", "tooling", "tests")  # the folders the layers live in
PACKAGES = ("constructs_lib", "karpenter_stack")  # the app: no generated logical id written out
# A CDK logical id: a construct-path name followed by its 8-hex-digit path hash (Cluster9EE0221C), or
# the fixed uuid-based id of a singleton (AWS679f53fac002430cb0da5b7982bd2287).
GENERATED_ID = re.compile(r"\b[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*[0-9A-F]{8}\b|[0-9a-f]{32}")


def _layer(name: str) -> str:
    return max((layer for layer in LAYERS if name == layer or name.startswith(layer + ".")), key=len)


def _modules(packages: tuple[str, ...] = TOP) -> dict[str, Path]:
    modules = {}
    for package in packages:
        for path in (ROOT / package).rglob("*.py"):
            if "teardown_handler" in path.parts:  # Lambda code, shipped on its own
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _imports(name: str, path: Path) -> set[str]:
    """The app's own modules that ``name`` imports (absolute or relative)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in walked(path.read_text()):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return {m for m in found if m.split(".")[0] in TOP}


def _graph() -> dict[str, set[str]]:
    return {name: set(deps) for name, deps in _graph_at(ROOT).items()}


@functools.cache
def _graph_at(root: Path) -> dict[str, frozenset[str]]:
    """The import graph of the packages under ``root`` (ROOT, which two tests point elsewhere), read once."""
    modules = _modules()
    return {
        name: frozenset(m for m in _imports(name, path) if m in modules and m != name) for name, path in modules.items()
    }


def _upward(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """module -> the modules of higher layers it imports."""
    rank = {layer: i for i, layer in enumerate(LAYERS)}
    found = {name: sorted(m for m in deps if rank[_layer(m)] > rank[_layer(name)]) for name, deps in graph.items()}
    return {name: deps for name, deps in found.items() if deps}


def test_each_layer_imports_only_the_layers_below_it():
    """The construct library never imports the app; neither imports the tooling; nothing but the tests imports
    the tests (the review once imported tests.lifecycle_model while tests/cfn.py imported the review)."""
    graph = _graph()
    assert {_layer(name) for name in graph} == set(LAYERS)
    assert len(graph) > 100
    assert _upward(graph) == {}


def test_the_layer_check_finds_an_import_of_the_tests(tmp_path, monkeypatch):
    for package, module, text in (
        ("tooling", "review", "from tests.cfn import each\n"),
        ("tests", "cfn", "from tooling import review\n"),
        ("karpenter_stack", "app", "import tooling.review\n"),
        ("constructs_lib", "network", "from constructs_lib.karpenter import nag\n"),
        ("constructs_lib/karpenter", "construct", "from ..network import Network\n"),
    ):
        (tmp_path / package).mkdir(exist_ok=True)
        (tmp_path / package / "__init__.py").write_text("")
        (tmp_path / package / f"{module}.py").write_text(text)
    monkeypatch.setattr("tests.test_architecture.ROOT", tmp_path)
    assert _upward(_graph()) == {
        "constructs_lib.karpenter.construct": ["constructs_lib.network"],
        "karpenter_stack.app": ["tooling.review"],
        "tooling.review": ["tests.cfn"],
    }


def test_nothing_patches_the_import_path():
    """Commands run as modules of the project (`python -m tooling.review`), so nothing edits sys.path."""
    patched = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in [*_modules().values(), ROOT / "app.py"]
        for node in walked(path.read_text())
        if isinstance(node, ast.Attribute) and node.attr == "path" and getattr(node.value, "id", None) == "sys"
    ]
    assert patched == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    # a package's __init__ re-exporting its modules is not a cycle of theirs
    edges = {n: {d for d in deps if not n.startswith(d + ".")} for n, deps in graph.items()}
    state: dict[str, str] = {}
    cycles: list[list[str]] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = "open"
        for dep in sorted(edges.get(node, ())):
            if state.get(dep) == "open":
                cycles.append([*trail[trail.index(dep) :], dep])
            elif dep not in state:
                visit(dep, [*trail, dep])
        state[node] = "done"

    for name in sorted(edges):
        if name not in state:
            visit(name, [name])
    return cycles


def test_no_import_cycles():
    assert _cycles(_graph()) == []


def test_the_checks_find_a_cycle_when_there_is_one(tmp_path, monkeypatch):
    package = tmp_path / "constructs_lib"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text("from .a import thing\n")
    monkeypatch.setattr("tests.test_architecture.ROOT", tmp_path)
    assert _cycles(_graph()) == [["constructs_lib.a", "constructs_lib.b", "constructs_lib.a"]]


def test_no_generated_logical_id_is_written_out_in_the_code():
    hits = {
        f"{path.relative_to(ROOT)}:{i}": m.group()
        for path in _modules(PACKAGES).values()
        for i, line in enumerate(path.read_text().splitlines(), 1)
        for m in [GENERATED_ID.search(line)]
        if m
    }
    assert hits == {}
    assert GENERATED_ID.search('"IsCompleteHandler7073F4DA"') and GENERATED_ID.search(
        "AWS679f53fac002430cb0da5b7982bd2287"
    )
    assert not GENERATED_ID.search("al2023@v20260801")


MAX_FUNCTION_LINES = 60


def _long_functions(limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """Every function (method, nested function) of the app's packages and the tooling longer than ``limit`` lines,
    decorators not counted: ``<path>:<line> <name> is <n> lines``, longest first."""
    found = []
    for path in _modules((*PACKAGES, "tooling")).values():
        for node in walked(path.read_text()):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > limit:
                    found.append((length, f"{path.relative_to(ROOT)}:{node.lineno} {node.name} is {length} lines"))
    return [line for _, line in sorted(found, reverse=True)]


def test_no_function_is_longer_than_60_lines():
    """Issue 23: small helpers stay small, in the app, the library and the tooling (the teardown handler, a Lambda
    asset kept byte-identical, aside)."""
    assert _long_functions() == [], f"split them (at most {MAX_FUNCTION_LINES} lines each)"


MAX_MODULE_LINES = 500


def _long_modules(limit: int = MAX_MODULE_LINES) -> list[str]:
    """Every Python file outside the tests longer than ``limit`` lines: ``<path> is <n> lines``, longest first."""
    paths = [
        ROOT / "app.py",
        *(p for top in ("constructs_lib", "karpenter_stack", "tooling") for p in (ROOT / top).rglob("*.py")),
    ]
    found = [
        (len(path.read_text().splitlines()), path.relative_to(ROOT)) for path in paths if "upstream" not in path.parts
    ]
    return [f"{path} is {n} lines" for n, path in sorted(found, reverse=True) if n > limit]


def test_no_module_is_longer_than_500_lines():
    """Issue 42: a module holds one thing; a longer one is split along its seams (its sections, its classes)."""
    assert _long_modules() == [], f"split them (at most {MAX_MODULE_LINES} lines each)"


def test_the_module_length_check_names_a_long_module(tmp_path, monkeypatch):
    (tmp_path / "tooling").mkdir()
    (tmp_path / "tooling" / "long.py").write_text("x = 1\n" * 501)
    (tmp_path / "tooling" / "short.py").write_text("x = 1\n" * 500)
    (tmp_path / "app.py").write_text("")
    monkeypatch.setattr("tests.test_architecture.ROOT", tmp_path)
    assert _long_modules() == ["tooling/long.py is 501 lines"]


def test_the_length_check_names_a_long_function_and_its_length(tmp_path, monkeypatch):
    package = tmp_path / "karpenter_stack"
    package.mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(60))
    (package / "long.py").write_text(f"class C:\n    def build(self):\n{body.replace('    ', '        ')}\n")
    (package / "short.py").write_text(f"def build():\n{body[: body.index('x59')]}\n")
    handler = tmp_path / "constructs_lib" / "teardown_handler"
    handler.mkdir(parents=True)
    (handler / "index.py").write_text(f"def handler(event, context):\n{body}")
    monkeypatch.setattr("tests.test_architecture.ROOT", tmp_path)
    assert _long_functions() == ["karpenter_stack/long.py:2 build is 61 lines"]


def _aws_cdk_modules(packages: tuple[str, ...]) -> set[str]:
    """The aws_cdk modules the code imports (``from aws_cdk import aws_eks`` is a module; ``Duration`` is not)."""
    found = set()
    for path in _modules(packages).values():
        for node in walked(path.read_text()):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.split(".")[0] == "aws_cdk"}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "aws_cdk" and not node.level:
                module = node.module or ""
                found.add(module)
                found |= {f"{module}.{a.name}" for a in node.names if module == "aws_cdk" and a.name[0].islower()}
    return found


def test_mypy_reads_every_aws_cdk_module_the_code_imports():
    """pyproject.toml has mypy skip aws-cdk-lib's ~300 service modules (a cold run: 40 s -> 5 s) but those the
    type-checked packages import; a module imported but not listed would be typed Any, unnoticed."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    follow = {o["follow_imports"]: set(o["module"]) for o in config["overrides"] if "follow_imports" in o}
    assert follow["skip"] == {"aws_cdk.*"}
    assert follow["normal"] == _aws_cdk_modules(tuple(config["files"]))
