"""The chart component's package: plotly.js copied into the folder Streamlit serves."""

import shutil

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
