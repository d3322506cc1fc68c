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



# ---------------------------------------------------------------------------------------------
# Issue 13, item 9: private names, module length, import cycles, side effects, registries.
# Each checker takes a {module name: path} map, so the tests below also run it on a small
# synthetic package written to tmp_path: the checks are shown to fail where they should.
# ---------------------------------------------------------------------------------------------

MAX_LINES = 450
#: private *modules* any gpexplorer module may import as a module: the shared helpers of
#: ARCHITECTURE.md (numba presets, BLAS ffi, the thread policy; validation is the public
#: ``gpexplorer.validation``) and the numba leaves
#: (``kernels/_loops``, ``sparse/_core``, ``linearized/_loops``: compiled callers elsewhere, such
#: as the fused path in sparse/_core, must call compiled leaves directly). Any other private
#: module only by its own package. Private *names* inside a module are never imported, nor
#: reached as ``module._name``, across modules.
PACKAGE_PRIVATE_MODULES = {"_jit", "_blas", "_threads", "_loops", "_core"}
#: calls that set BLAS or numba thread counts for the whole process
THREAD_SETTERS = {"threadpool_limits", "limit", "openblas_set_num_threads", "openblas_set_num_threads_local",
                  "set_num_threads"}
JIT_DECORATORS = {"njit", "jit", "njit_cached", "njit_kernel_loop", "vectorize", "guvectorize"}


def module_map(root, package_dir):
    """{dotted module name: path} of every .py file under ``package_dir`` (packages by __init__)."""
    out = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = module_map(ROOT, PACKAGE)
_TREES = {}


def _tree(path):
    if path not in _TREES:
        _TREES[path] = ast.parse(path.read_text())
    return _TREES[path]


def _resolve_from(modules, importer, node):
    """The absolute module a ``from ... import`` names (relative imports resolved)."""
    if node.level == 0:
        return node.module
    base = importer.split(".")
    if modules[importer].name != "__init__.py":
        base = base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _known(modules, name):
    """The module ``name`` denotes in ``modules`` (its longest known prefix), or None."""
    parts = name.split(".")
    while parts:
        if ".".join(parts) in modules:
            return ".".join(parts)
        parts.pop()
    return None


def imports_of(modules, importer):
    """(line, target module, imported name or None, whether the name is a module) for every
    import of a module of ``modules`` by ``importer``, at any depth (function-level imports
    included), and every ``importlib.import_module`` of a module named by a string constant."""
    tree = _tree(modules[importer])
    lazy_strings = any(isinstance(n, ast.Attribute) and n.attr == "import_module" for n in ast.walk(tree))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _known(modules, alias.name)
                if target:
                    yield node.lineno, target, None, True
        elif isinstance(node, ast.ImportFrom):
            module = _resolve_from(modules, importer, node)
            target = _known(modules, module) if module else None
            for alias in node.names if target else ():
                if f"{module}.{alias.name}" in modules:
                    yield node.lineno, f"{module}.{alias.name}", alias.name, True
                else:
                    yield node.lineno, target, alias.name, False
        elif lazy_strings and isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in modules:
            yield node.lineno, node.value, None, True


def _where(modules, importer, lineno):
    path = modules[importer]
    return f"{path.relative_to(path.parents[len(importer.split('.')) - 1 + (path.name == '__init__.py')])}:{lineno}"


def private_imports(modules):
    out = []
    for importer in modules:
        for lineno, target, name, is_module in imports_of(modules, importer):
            if target == importer:
                continue
            if is_module:
                last, parent = target.rsplit(".", 1)[-1], target.rsplit(".", 1)[0]
                private = any(p.startswith("_") and not p.startswith("__") for p in target.split("."))
                if private and last not in PACKAGE_PRIVATE_MODULES and parent != importer:
                    out.append(f"{_where(modules, importer, lineno)} imports the private module {target}")
            elif name.startswith("_") and not name.startswith("__"):
                out.append(f"{_where(modules, importer, lineno)} imports the private name {target}.{name}")
    return out


def private_attribute_uses(modules):
    """``alias._name`` where ``alias`` is another module of ``modules``, bound by an import."""
    out = []
    for importer in modules:
        tree = _tree(modules[importer])
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = _resolve_from(modules, importer, node)
                for alias in node.names:
                    if module and f"{module}.{alias.name}" in modules:
                        aliases[alias.asname or alias.name] = f"{module}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname and alias.name in modules:
                        aliases[alias.asname] = alias.name
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                    and node.attr.startswith("_") and not node.attr.startswith("__") \
                    and aliases[node.value.id] != importer:
                out.append(f"{_where(modules, importer, node.lineno)} uses {aliases[node.value.id]}.{node.attr}")
    return out


def import_graph(modules):
    """Explicit imports only: importing ``p.sub`` is an edge to ``p.sub``, not to ``p`` (so a
    package whose __init__ imports its own submodules is no cycle); ``from p import name``
    with a name that is not a submodule is an edge to ``p``'s __init__."""
    graph = {m: set() for m in modules}
    for importer in modules:
        for _, target, _, _ in imports_of(modules, importer):
            if target != importer:
                graph[importer].add(target)
    return graph


def cycles(graph):
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def one_cycle(graph, component):
    """A shortest path a -> ... -> a inside a strongly connected component (for the message)."""
    members, start = set(component), component[0]
    paths, seen = [[start]], {start}
    while paths:
        path = paths.pop(0)
        for w in sorted(graph[path[-1]] & members):
            if w == start:
                return path + [start]
            if w not in seen:
                seen.add(w)
                paths.append(path + [w])
    return component


def calls_at_import_or_in_init(tree):
    """Calls run at import (module and class bodies, decorators, defaults) or in an __init__."""
    out = []

    def visit(node, in_init):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                at_definition = list(getattr(child, "decorator_list", [])) + child.args.defaults + \
                    [d for d in child.args.kw_defaults if d is not None]
                for n in at_definition:
                    visit_node(n, in_init)
                body = [child.body] if isinstance(child, ast.Lambda) else child.body
                if in_init or getattr(child, "name", "") == "__init__":
                    for stmt in body:
                        visit_node(stmt, True)
                continue
            visit_node(child, in_init)

    def visit_node(node, in_init):
        if isinstance(node, ast.Call):
            out.append(node)
        visit(node, in_init)

    visit(tree, False)
    return out


def _call_name(call):
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")


def thread_limit_calls(modules):
    return [f"{_where(modules, name, c.lineno)} calls {_call_name(c)}" for name, path in modules.items()
            for c in calls_at_import_or_in_init(_tree(path)) if _call_name(c) in THREAD_SETTERS]


def jitted_files(modules, package_dir):
    out = set()
    for path in modules.values():
        for node in ast.walk(_tree(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for dec in node.decorator_list:
                    target = dec.func if isinstance(dec, ast.Call) else dec
                    ident = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
                    if ident in JIT_DECORATORS:
                        out.add(path.relative_to(package_dir).as_posix())
    return out


# the checkers on a synthetic package: each rule caught where broken, quiet where kept ----------

SYNTHETIC = {
    "__init__.py": "from pkg import sub\nfrom pkg import _private_mod\n",
    "_private_mod.py": "",
    "_threads.py": "def scoped():\n    pass\n",
    "sub/__init__.py": "from pkg.sub import leaf\n",
    "sub/leaf.py": "from pkg import _threads\nfrom pkg.other import _hidden\nfrom ..other import public\n"
                   "from pkg import other as o\nx = o._hidden\n",
    "other.py": "import importlib\npublic = 1\n_hidden = 2\n\n\ndef lazy():\n    from pkg.sub import leaf\n",
    "cyc_a.py": "def f():\n    from . import cyc_b\n",
    "cyc_b.py": "import importlib\nM = importlib.import_module('pkg.cyc_a')\n",
    "blas.py": "from threadpoolctl import threadpool_limits\nthreadpool_limits(1)\n\n\nclass Model:\n"
               "    def __init__(self):\n        threadpool_limits(2)\n\n    def fit(self):\n"
               "        with threadpool_limits(1):\n            pass\n",
    "_priv_pkg/__init__.py": "",
    "_priv_pkg/mod.py": "",
    "user.py": "from pkg._priv_pkg import mod\n",
}


@pytest.fixture
def synthetic(tmp_path):
    for name, text in SYNTHETIC.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return module_map(tmp_path, tmp_path / "pkg")


def test_checkers_catch_violations_in_a_synthetic_package(synthetic):
    assert sorted(private_imports(synthetic)) == [
        "pkg/sub/leaf.py:2 imports the private name pkg.other._hidden",
        "pkg/user.py:1 imports the private module pkg._priv_pkg.mod",
    ]
    assert private_attribute_uses(synthetic) == ["pkg/sub/leaf.py:5 uses pkg.other._hidden"]
    graph = import_graph(synthetic)
    assert "pkg.other" in graph["pkg.sub.leaf"] and "pkg.sub.leaf" in graph["pkg.other"]  # relative, lazy
    found = cycles(graph)
    assert found == [["pkg.cyc_a", "pkg.cyc_b"], ["pkg.other", "pkg.sub.leaf"]]  # not pkg <-> pkg.sub
    assert one_cycle(graph, found[0]) == ["pkg.cyc_a", "pkg.cyc_b", "pkg.cyc_a"]
    assert thread_limit_calls(synthetic) == ["pkg/blas.py:2 calls threadpool_limits",
                                             "pkg/blas.py:7 calls threadpool_limits"]  # not the scoped one in fit


# the rules on gpexplorer/ ---------------------------------------------------------------------

def test_the_package_graph_is_read():
    graph = import_graph(MODULES)
    assert {"gpexplorer.covariances", "gpexplorer.optimize", "gpexplorer.sparse.objectives"} <= \
        graph["gpexplorer.sparse.regression"]
    assert "gpexplorer.linearized.linearization" in graph["gpexplorer.linearized.gauss_newton"]  # a lazy import
    assert "gpexplorer.ui.sparse.lab" in graph["gpexplorer.ui"]  # importlib.import_module of a constant


def test_no_private_name_is_imported_across_modules():
    violations = private_imports(MODULES) + private_attribute_uses(MODULES)
    assert not violations, "private names used across modules (make them public or move them):\n" + \
        "\n".join(violations)


@pytest.mark.parametrize("name", sorted(MODULES), ids=str)
def test_no_module_over_the_line_limit(name):
    n = len(MODULES[name].read_text().splitlines())
    assert n <= MAX_LINES, f"{MODULES[name].relative_to(ROOT)} has {n} lines (limit {MAX_LINES})"


def test_no_import_cycles_lazy_imports_included():
    graph = import_graph(MODULES)
    found = [" -> ".join(one_cycle(graph, c)) + f"   (all of: {', '.join(c)})" for c in cycles(graph)]
    assert not found, "import cycles (function-level imports included):\n" + "\n".join(found)


def test_every_jit_module_exists_and_every_jitted_module_is_listed():
    from gpexplorer._jit import JIT_MODULES

    missing = [m for m in JIT_MODULES if not (PACKAGE / m).is_file()]
    assert not missing, f"_jit.JIT_MODULES lists files that do not exist: {missing}"
    unlisted = sorted(jitted_files(MODULES, PACKAGE) - set(JIT_MODULES))
    assert not unlisted, f"modules with jitted functions missing from _jit.JIT_MODULES (stale caches): {unlisted}"


def test_no_thread_limits_at_import_or_in_a_constructor():
    violations = thread_limit_calls(MODULES)
    assert not violations, "BLAS/numba threads set at import or in __init__ (scope them with gpexplorer._threads " \
                           "around the work instead):\n" + "\n".join(violations)


def test_every_registered_kernel_and_feature_runs_through_the_generic_tests():
    import features_for_tests
    import test_generic_registry as generic
    from gpexplorer.inducing import FEATURES
    from gpexplorer.kernels import KERNELS, Product, Sum

    assert set(KERNELS) <= set(generic.KERNEL_CASES)
    assert {type(make()) for make in generic.KERNEL_CASES.values()} >= set(KERNELS.values()) | {Sum, Product}
    test_only = set(features_for_tests.TEST_FEATURES.values())
    assert set(generic.FEATURE_TYPES.values()) == set(FEATURES.values()) | test_only
    assert set(generic.ALL_PAIRS) == {(k, f) for k in generic.KERNEL_CASES for f in generic.FEATURE_TYPES}
    assert set(generic.PAIRS) == {p for p in generic.ALL_PAIRS if generic.supported(*p)}


#: a jitted function takes at most this many positional arguments and returns tuples of at most
#: JIT_MAX_TUPLE entries (larger groups travel as named tuples, read by field name)
JIT_MAX_ARGS, JIT_MAX_TUPLE = 6, 4


def _jitted_functions():
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef):
                continue
            names = {d.id if isinstance(d, ast.Name) else getattr(d, "attr", None) for d in node.decorator_list}
            if names & JIT_DECORATORS:
                yield path.relative_to(ROOT), node


def test_jitted_signatures_stay_small():
    functions = list(_jitted_functions())
    assert len(functions) > 10  # the walk finds the compiled leaves
    too_many = [f"{p}:{f.lineno} {f.name} ({len(f.args.args)} arguments)" for p, f in functions
                if len(f.args.args) > JIT_MAX_ARGS]
    long_tuples = [f"{p}:{r.lineno} {f.name} returns a {len(r.value.elts)}-tuple" for p, f in functions
                   for r in ast.walk(f) if isinstance(r, ast.Return) and isinstance(r.value, ast.Tuple)
                   and len(r.value.elts) > JIT_MAX_TUPLE]
    assert not too_many and not long_tuples, too_many + long_tuples


def test_pages_import_nothing_from_the_reproductions():
    """``ui/`` sits above the library, not above ``experiments/``: a page's data are
    ``datasets`` entries and its computing half lives in the inference families."""
    pages = [m for m in MODULES if m.startswith("gpexplorer.ui")]
    assert len(pages) > 10
    found = [f"{_where(MODULES, m, line)} imports {target}" for m in pages
             for line, target, _, _ in imports_of(MODULES, m) if target.startswith("gpexplorer.experiments")]
    assert not found, found


def private_scipy_imports(paths):
    """``import scipy.x._y``, ``from scipy.x._y import ...`` and ``from scipy.x import _y`` (a
    private scipy module or name: no stable API, as the former L-BFGS-B loop on
    ``scipy.optimize._lbfgsb`` that sniffed its docstring for the signature) in ``paths``."""
    out = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            private = [n for n in names if n.split(".")[0] == "scipy" and
                       any(p.startswith("_") for p in n.split(".")[1:])]
            if private:
                out.append(f"{path.name}:{node.lineno} imports {private[-1]}")
    return out


def test_no_private_scipy_module_is_imported(tmp_path):
    found = private_scipy_imports(sorted(PACKAGE.rglob("*.py")))
    assert not found, found
    bad = tmp_path / "bad.py"
    bad.write_text("from scipy.optimize import _lbfgsb\nimport scipy.optimize._minimize\n"
                   "from scipy.optimize._lbfgsb_py import status_messages\nfrom scipy.optimize import minimize\n")
    assert len(private_scipy_imports([bad])) == 3


# ---------------------------------------------------------------------------------------------
# Issue 25, item 6: no function or method in the package, Python or jitted, takes more than
# MAX_POSITIONAL positional parameters. The receiver of a method (``self``, ``cls``: the first
# parameter of a function defined in a class body, unless it is a staticmethod) is not counted:
# a caller never passes it in the argument list. Positional-only parameters count; ``*args``
# and keyword-only parameters do not. Beyond 8: keyword-only parameters (``*``), an options
# dataclass or a named tuple.
# ---------------------------------------------------------------------------------------------

MAX_POSITIONAL = 8


def positional_parameters(function, in_class):
    args = function.args
    n = len(args.posonlyargs) + len(args.args)
    decorators = {getattr(d, "id", getattr(d, "attr", "")) for d in function.decorator_list}
    return n - 1 if in_class and n and "staticmethod" not in decorators else n


def long_signatures(modules, limit=MAX_POSITIONAL):
    """``path:line name (n positional parameters)`` for every def of ``modules`` over ``limit``."""
    out = []

    def visit(node, name, in_class):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = positional_parameters(child, in_class)
                if n > limit:
                    out.append(f"{_where(modules, name, child.lineno)} {child.name} ({n} positional parameters)")
            visit(child, name, isinstance(child, ast.ClassDef))

    for name, path in modules.items():
        visit(_tree(path), name, False)
    return out


SYNTHETIC_SIGNATURES = {
    "__init__.py": "",
    "flat.py": "def nine(a, b, c, d, e, f, g, h, i):\n    pass\n\n\n"
               "def eight_then_keywords(a, b, c, d, e, f, g, h, *, i, j, k=1):\n    pass\n\n\n"
               "def star_args(a, *rest, **options):\n    pass\n\n\n"
               "def outer():\n    def inner(a, b, c, d, e, f, g, h, i, /):\n        pass\n",
    "cls.py": "class Model:\n    def method(self, a, b, c, d, e, f, g, h):\n        pass\n\n"
              "    @classmethod\n    def build(cls, a, b, c, d, e, f, g, h):\n        pass\n\n"
              "    @staticmethod\n    def helper(a, b, c, d, e, f, g, h, i):\n        pass\n\n"
              "    async def wide(self, a, b, c, d, e, f, g, h, i):\n        pass\n",
}


def test_long_signature_checker_on_a_synthetic_package(tmp_path):
    for name, text in SYNTHETIC_SIGNATURES.items():
        (tmp_path / "pkg").mkdir(exist_ok=True)
        (tmp_path / "pkg" / name).write_text(text)
    found = long_signatures(module_map(tmp_path, tmp_path / "pkg"))
    assert sorted(found) == [
        "pkg/cls.py:10 helper (9 positional parameters)",  # a staticmethod has no receiver
        "pkg/cls.py:13 wide (9 positional parameters)",  # self not counted, the other 9 are
        "pkg/flat.py:1 nine (9 positional parameters)",
        "pkg/flat.py:14 inner (9 positional parameters)",  # nested, positional-only
    ]


def test_no_function_takes_more_than_8_positional_parameters():
    """Every def under gpexplorer/ (Python or jitted, nested ones too). ``self`` / ``cls`` are not
    counted (a caller never passes them), positional-only parameters are, ``*args`` and
    keyword-only parameters are not. Issue 25 counted 28 offenders before this rule."""
    assert long_signatures(MODULES, limit=5), "the walk finds signatures"  # the checker reads the package
    found = long_signatures(MODULES)
    assert not found, f"over {MAX_POSITIONAL} positional parameters (make the rest keyword-only, or pass an " \
                      "options dataclass / named tuple):\n" + "\n".join(found)
