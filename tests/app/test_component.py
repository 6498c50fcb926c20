"""The chart component's package: plotly.js copied into the folder Streamlit serves, and
the modules its entry asks for."""

import re
import shutil
from pathlib import Path

import pytest

import attention_explorer


def test_plotly_js_is_copied_once_and_kept(tmp_path):
    source = tmp_path / "plotly.min.js"
    source.write_bytes(b"plotly" * 100)
    assets = tmp_path / "chart"
    assets.mkdir()
    target = attention_explorer.copy_plotly_js(source, assets)
    assert target == assets / "plotly.min.js"
    assert target.read_bytes() == source.read_bytes()
    stamp = target.stat().st_mtime_ns
    attention_explorer.copy_plotly_js(source, assets)
    assert target.stat().st_mtime_ns == stamp  # the same size: not copied again
    source.write_bytes(b"plotly" * 101)  # another plotly package
    assert attention_explorer.copy_plotly_js(source, assets).read_bytes() == source.read_bytes()
    assert [path.name for path in assets.iterdir()] == ["plotly.min.js"]


def test_processes_copying_at_once_all_succeed(tmp_path, monkeypatch):
    """Servers (or pytest-xdist's workers) importing the package together in a fresh
    checkout: another one copies and renames between this one's copy and its rename."""
    source = tmp_path / "plotly.min.js"
    source.write_bytes(b"plotly" * 100)
    assets = tmp_path / "chart"
    assets.mkdir()
    copy = shutil.copyfile

    def copy_then_another_process_copies_too(src, dst):
        copy(src, dst)
        monkeypatch.setattr(shutil, "copyfile", copy)
        attention_explorer.copy_plotly_js(source, assets)
        return dst

    monkeypatch.setattr(shutil, "copyfile", copy_then_another_process_copies_too)
    target = attention_explorer.copy_plotly_js(source, assets)
    assert target.read_bytes() == source.read_bytes()
    assert [path.name for path in assets.iterdir()] == ["plotly.min.js"]  # no partial left


def _bundle(path, version):
    path.write_text(f"/**\n* plotly.js v{version}\n*/\nvar Plotly = {{}};\n")
    return path


def test_the_partial_bundle_is_served_only_for_its_own_version(tmp_path):
    vendor = tmp_path / "vendor"
    vendor.mkdir()
    package = _bundle(tmp_path / "plotly.min.js", "9.9.9")
    assert attention_explorer.plotly_js_source(package, vendor) == package  # none built
    partial = _bundle(vendor / "plotly-9.9.8.partial.min.js", "9.9.8")
    assert attention_explorer.plotly_js_source(package, vendor) == package  # another version
    partial.rename(vendor / "plotly-9.9.9.partial.min.js")
    chosen = attention_explorer.plotly_js_source(package, vendor)
    assert chosen == vendor / "plotly-9.9.9.partial.min.js"
    assets = tmp_path / "chart"
    assets.mkdir()
    assert attention_explorer.copy_plotly_js(chosen, assets).read_bytes() == chosen.read_bytes()


def test_every_trace_the_app_draws_is_in_the_partial_bundle():
    """The figures' trace types (``go.Heatmap(`` ...) are those the partial bundle registers."""
    root = Path(attention_explorer.__file__).resolve().parents[1]
    used = {
        name.lower()
        for path in [*root.glob("app/**/*.py"), *root.glob("pages/*.py")]
        for name in re.findall(r"\bgo\.([A-Z]\w*)\(", path.read_text())
    } - {"figure"}
    assert used
    assert used <= set(attention_explorer.PARTIAL_TRACES), used
    bundles = sorted(attention_explorer.VENDOR_DIR.glob("plotly-*.partial.min.js"))
    assert bundles
    for bundle in bundles:
        text = bundle.read_text()
        assert attention_explorer.plotly_js_version(bundle) in bundle.name
        for trace in attention_explorer.PARTIAL_TRACES:
            assert f'moduleType:"trace",name:"{trace}"' in text, (bundle.name, trace)


def test_the_installed_plotly_gets_its_partial_bundle():
    version = attention_explorer.plotly_js_version(attention_explorer.PLOTLY_JS)
    if attention_explorer.plotly_js_source() == attention_explorer.PLOTLY_JS:
        pytest.skip(f"no partial bundle for plotly.js {version}: run scripts/build_plotly.sh")
    served = attention_explorer.ASSET_DIR / "plotly.min.js"
    assert attention_explorer.plotly_js_version(served) == version
    assert served.stat().st_size < attention_explorer.PLOTLY_JS.stat().st_size / 2


def _imports(module):
    """The modules ``module`` (a file name in the chart folder) imports statically."""
    text = (attention_explorer.ASSET_DIR / module).read_text()
    return set(re.findall(r'^import\s[^;]*?from\s+"\./([\w.]+\.js)";', text, re.MULTILINE))


def test_the_chart_entry_asks_for_every_module_under_mount_at_once():
    """chart.js's list is mount.js and every module it imports, however deep: no more, no fewer.

    A module missing from it would arrive a round trip late (one level at a time, as
    before the list); one it no longer needs would be fetched for nothing.
    """
    listed = re.search(
        r"const MODULES = \[(.*?)\];",
        (attention_explorer.ASSET_DIR / "chart.js").read_text(),
        re.DOTALL,
    )
    names = re.findall(r'"\./([\w.]+\.js)"', listed.group(1))
    tree, todo = set(), ["mount.js"]
    while todo:
        module = todo.pop()
        if module not in tree:
            tree.add(module)
            todo.extend(_imports(module))
    assert names[0] == "mount.js"  # the one whose default export mounts
    assert len(names) == len(set(names))
    assert set(names) == tree
    assert {"plot.js", "preview.js", "theme.js"} <= tree  # the parse found the tree's depth
