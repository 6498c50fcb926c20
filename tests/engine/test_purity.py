"""The engine stays pure NumPy and stateless: no UI libraries, no global random state.

Each checker is first run on a snippet that breaks the rule, so a checker that can no
longer see a violation fails here rather than passing everything.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import engine

ENGINE_DIR = Path(engine.__file__).resolve().parent
ENGINE_FILES = sorted(ENGINE_DIR.glob("*.py"))
FORBIDDEN = {"streamlit", "plotly", "pandas"}
SEEDED_CONSTRUCTORS = {
    "default_rng",
    "RandomState",
    "Generator",
    "SeedSequence",
    "PCG64",
    "PCG64DXSM",
    "MT19937",
    "Philox",
    "SFC64",
    "BitGenerator",
}


def forbidden_imports(source):
    """Top-level names of forbidden modules that ``source`` imports."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and (
                (isinstance(node.func, ast.Name) and node.func.id == "__import__")
                or (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
            )
        ):
            names = [node.args[0].value]
        else:
            continue
        found |= {name.split(".")[0] for name in names} & FORBIDDEN
    return found


def global_random_calls(source):
    """Uses of ``np.random.<fn>`` (or ``from numpy.random import <fn>``) on the global state."""
    tree = ast.parse(source)
    numpy_names, random_names = {"numpy"}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "numpy":
                    numpy_names.add(alias.asname or "numpy")
                elif alias.name == "numpy.random" and alias.asname:
                    random_names.add(alias.asname)
        elif isinstance(node, ast.ImportFrom) and node.module == "numpy":
            random_names |= {a.asname or a.name for a in node.names if a.name == "random"}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "numpy.random":
            found += [a.name for a in node.names if a.name not in SEEDED_CONSTRUCTORS]
        if not isinstance(node, ast.Attribute) or node.attr in SEEDED_CONSTRUCTORS:
            continue
        owner = node.value
        is_np_random = (
            isinstance(owner, ast.Attribute)
            and owner.attr == "random"
            and isinstance(owner.value, ast.Name)
            and owner.value.id in numpy_names
        )
        is_random_alias = isinstance(owner, ast.Name) and owner.id in random_names
        if is_np_random or is_random_alias:
            found.append(node.attr)
    return found


@pytest.mark.parametrize(
    "snippet",
    [
        "import streamlit as st",
        "import plotly.graph_objects as go",
        "from pandas import DataFrame",
        "def f():\n    import pandas\n",
        "import importlib\nimportlib.import_module('plotly.express')",
        "__import__('streamlit')",
    ],
)
def test_import_checker_catches_forbidden_imports(snippet):
    assert forbidden_imports(snippet)


@pytest.mark.parametrize(
    "snippet",
    [
        "import numpy as np\nnp.random.seed(0)",
        "import numpy as np\nx = np.random.normal(size=3)",
        "import numpy\nnumpy.random.shuffle(x)",
        "import numpy.random as npr\nnpr.rand(3)",
        "from numpy import random\nrandom.standard_normal(3)",
        "from numpy.random import randn",
    ],
)
def test_random_checker_catches_global_draws(snippet):
    assert global_random_calls(snippet)


def test_random_checker_allows_seeded_generators():
    source = (
        "import numpy as np\n"
        "rng = np.random.default_rng(0)\n"
        "old = np.random.RandomState(3)\n"
        "x = rng.normal(size=3)\n"
        "g: np.random.Generator\n"
    )
    assert global_random_calls(source) == []


def test_engine_files_were_found():
    names = {path.name for path in ENGINE_FILES}
    assert {"attention.py", "book.py", "positional.py", "saturation.py", "toy.py"} <= names


@pytest.mark.parametrize("path", ENGINE_FILES, ids=lambda p: p.name)
def test_engine_imports_no_ui_or_dataframe_library(path):
    assert forbidden_imports(path.read_text(encoding="utf-8")) == set()


@pytest.mark.parametrize("path", ENGINE_FILES, ids=lambda p: p.name)
def test_engine_draws_randomness_only_from_explicit_seeds(path):
    assert global_random_calls(path.read_text(encoding="utf-8")) == []


def _forbidden_modules_after(imports):
    """Forbidden modules in ``sys.modules`` of a fresh interpreter after ``imports``."""
    code = (
        "import importlib, sys\n"
        f"for name in {imports!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {sorted(FORBIDDEN)!r}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return result.stdout.strip()


def test_importing_engine_loads_no_ui_or_dataframe_library():
    modules = [f"engine.{path.stem}" for path in ENGINE_FILES if path.stem != "__init__"]
    assert _forbidden_modules_after(["engine", *modules]) == "[]"


def test_import_probe_sees_a_forbidden_library_when_one_is_loaded():
    assert "pandas" in _forbidden_modules_after(["engine", "pandas"])
