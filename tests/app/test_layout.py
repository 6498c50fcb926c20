"""The app floor's layout holds (issue #25): small files, short pages, imports that only go down.

``app/`` is sub-packages by role, each importing only those below it; a page asks the live
mechanism for a live section through its face and knows nothing of its parts; the chart
components ship no benchmark hook and format no number (Python's templates do, plotly.js
fills them). Each checker is first run on a case that breaks its rule, so a checker that
can no longer see a violation fails here rather than passing everything.
"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APP, PAGES, CHART = ROOT / "app", ROOT / "pages", ROOT / "attention_explorer" / "chart"
#: The sub-packages of app/, each above those before it: a module imports only from its own
#: sub-package and the ones listed before it (state at the ground, the live mechanism on top).
FLOORS = ("state", "words", "data", "views", "lecture", "widgets", "live")
#: Sub-packages on the same floor, which must not import each other either.
SAME_FLOOR = {"words": 1, "data": 1}
MAX_FILE_LINES = 400
MAX_PAGE_FUNCTION_LINES = 40


def floor(package):
    """How high ``package`` (a sub-package of app/) stands: words and data share a floor."""
    return SAME_FLOOR.get(package, FLOORS.index(package))


def app_imports(source):
    """The app sub-packages a module's source imports: ``from app.views import ...`` -> views."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] == "app" and len(parts) > 1:
                found.add(parts[1])
            elif node.module == "app":
                found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "app" and len(parts) > 1:
                    found.add(parts[1])
    return found & set(FLOORS)


def upward(package, source):
    """The sub-packages above ``package``, or beside it, that a module of it imports."""
    return sorted(
        imported
        for imported in app_imports(source)
        if imported != package and floor(imported) >= floor(package)
    )


def function_lengths(source):
    """Every function's length in lines (decorators included), by name."""
    lengths = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            lengths[node.name] = node.end_lineno - start + 1
    return lengths


def too_long(source, limit=MAX_FILE_LINES):
    """How many lines a file has past ``limit`` (0 when it is short enough)."""
    return max(0, source.count("\n") - limit)


def long_functions(source, limit=MAX_PAGE_FUNCTION_LINES):
    """The functions longer than ``limit`` lines, with their lengths."""
    return {name: lines for name, lines in function_lengths(source).items() if lines > limit}


def live_parts(source):
    """What a page uses of the live mechanism beyond its face: its modules, or a fragment."""
    found = re.findall(r"from app\.live(?:\.\w+)? import|app\.live\.\w+", source)
    return found + (["st.fragment"] if "st.fragment" in source else [])


#: What only the live mechanism knows: the live page names none of it.
LIVE_INTERNALS = ("frame", "fragment", "in_browser", "drawn", "del run", "MAX_BYTES")


def live_internals(source):
    """The live mechanism's internals that ``source`` names."""
    return [internal for internal in LIVE_INTERNALS if internal in source]


def benchmark_hooks(source):
    """The benchmark hooks in a shipped module: the frame log the harness now keeps."""
    return ["__aeFrames"] if "__aeFrames" in source else []


def number_formatting(source):
    """The ways of formatting a number in JavaScript that ``source`` uses."""
    calls = (".toFixed(", ".toPrecision(", "toLocaleString(", "NumberFormat(")
    return [call for call in calls if call in source]


def test_the_checkers_see_a_violation():
    assert upward("views", "from app.live import protocol\nfrom app.data import minilm") == ["live"]
    assert upward("words", "from app.data import layers") == ["data"]  # the same floor
    assert upward("state", "import app.widgets.sidebar") == ["widgets"]
    assert upward("data", "from app import views") == ["views"]
    assert upward("live", "from app import live\nfrom app.views import chart") == []
    assert too_long("x = 1\n" * 401) == 1
    assert too_long("x = 1\n" * 400) == 0
    assert function_lengths("def f():\n" + "    x = 1\n" * 41) == {"f": 42}
    assert long_functions("@st.fragment\ndef f():\n" + "    x = 1\n" * 39) == {"f": 41}
    assert long_functions("def f():\n" + "    x = 1\n" * 39) == {}
    assert live_parts("from app.live import slider") == ["from app.live import"]
    assert live_parts("from app.live.protocol import follow") != []
    assert live_parts("app.live.sweeps.scale_frames(s, h)") == ["app.live.sweeps"]
    assert live_parts("@st.fragment\ndef f(): pass") == ["st.fragment"]
    assert live_parts("from app import live\nlive.scale_section(s, h, t)") == []
    assert live_internals("del run\nx = frames[0]") == ["frame", "del run"]
    assert benchmark_hooks("window.__aeFrames = [];") == ["__aeFrames"]
    assert number_formatting("cell.textContent = z.toFixed(2);") == [".toFixed("]


SUB_PACKAGES = sorted(path.parent.name for path in APP.glob("*/__init__.py"))


def test_the_sub_packages_are_the_floors():
    assert sorted(FLOORS) == SUB_PACKAGES


@pytest.mark.parametrize(
    "path", sorted(APP.rglob("*.py")), ids=lambda path: str(path.relative_to(ROOT))
)
def test_no_app_file_over_400_lines_and_no_import_up(path):
    source = path.read_text()
    assert too_long(source) == 0
    if path.parent != APP:
        assert upward(path.parent.name, source) == []


@pytest.mark.parametrize("path", sorted(PAGES.glob("*.py")), ids=lambda path: path.name)
def test_pages_have_short_functions_and_ask_for_a_live_section_only(path):
    source = path.read_text()
    assert long_functions(source) == {}
    assert live_parts(source) == []  # the live mechanism's face only: no frames, no fragment


def test_the_live_page_knows_nothing_of_frames():
    source = (PAGES / "attention.py").read_text()
    assert "live.scale_section(" in source
    assert live_internals(source) == []


MODULES = sorted(path for path in CHART.glob("*.js") if path.name != "plotly.min.js")


def test_the_components_ship_no_benchmark_hook():
    assert MODULES
    assert benchmark_hooks("\n".join(path.read_text() for path in MODULES)) == []
    assert 'new CustomEvent("ae-frame"' in (CHART / "preview.js").read_text()


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.name)
def test_the_browser_formats_no_number(path):
    """Cell and hover texts are Python's: templates plotly.js fills, or text sent as it is."""
    assert number_formatting(path.read_text()) == []
