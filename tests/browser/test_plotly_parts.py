"""The plotly.js internals the previews rely on (chart/plotly_parts.js), on the plotly.js served.

One plot of each kind the previews touch (a heatmap with its colour bar and title, bars,
lines with a shape, a table), drawn in a bare page by the plotly.js the app serves (the
vendored partial bundle for the installed plotly's version), and each part of the adapter
checked against what plotly.js itself says of the plot: an upgrade that moves a part
fails here rather than in a lecture.
"""

import re

import attention_explorer

ADAPTER = attention_explorer.ASSET_DIR / "plotly_parts.js"

PLOTS = """async () => {
    const div = (id) => document.body.appendChild(
        Object.assign(document.createElement('div'), {id}));
    await Plotly.newPlot(div('heat'), [{type: 'heatmap', z: [[1, 2, 3], [4, 5, 6]],
        colorscale: 'Viridis', customdata: [[[0], [0], [0]], [[0], [0], [0]]]}],
        {title: {text: 'Weights<br>a head'}, width: 400, height: 300});
    await Plotly.newPlot(div('bars'), [{type: 'bar', x: ['a', 'b', 'c'], y: [0.2, 0.5, 0.3]}],
        {width: 400, height: 300, yaxis: {range: [0, 1]}});
    await Plotly.newPlot(div('lines'), [
        {type: 'scatter', mode: 'lines', x: [1, 2, 3], y: [1, 2, 1]},
        {type: 'scatter', mode: 'lines', x: [1, 2, 3], y: [3, 1, 2], xaxis: 'x2', yaxis: 'y2'}],
        {width: 400, height: 300, grid: {rows: 1, columns: 2, pattern: 'independent'},
         shapes: [{type: 'line', xref: 'x', yref: 'paper', x0: 2, x1: 2, y0: 0, y1: 1}]});
    await Plotly.newPlot(div('table'), [{type: 'table', header: {values: ['token', 'H']},
        cells: {values: [['a', 'b'], [0.5, 0.25]]}}], {width: 400, height: 300});
}"""

CHECKS = """() => {
    const [heat, bars, lines, table] = ['heat', 'bars', 'lines', 'table'].map(
        (id) => document.getElementById(id));
    const bar = colourBar(heat);
    const paths = [...barPaths(bars)];
    const corners = barCorners(paths[1].getAttribute('d'));
    const yaxis = axisOf(bars, 'y');
    const cells = [...cellTexts(table)].map(cellOf).filter(Boolean);
    return {
        drawn: laidOut(heat),
        z: fullTrace(heat).z.map((row) => Array.from(row)),
        colorscale: fullTrace(heat).colorscale.length,
        image: heatmapImage(heat) !== null,
        bar: bar !== null && bar.fill.getAttribute('height') > 0
            && bar.tick.querySelector('text') !== null,
        hidden: Object.values(UNDER_PREVIEW).map((part) => heat.querySelector(part) !== null),
        title: titleText(heat).textContent,
        bars: paths.length,
        top: Math.abs(yaxis.c2p(0.5) - Number(paths[1].getAttribute('d').match(/V(-?[\\d.]+)/)[1])),
        redrawn: barTo(corners, yaxis.c2p(0.5)),
        original: paths[1].getAttribute('d'),
        lines: linePaths(lines).length,
        second: axisOf(lines, fullTraces(lines)[1].xaxis) === lines._fullLayout.xaxis2,
        shape: shapeOf(lines, 0).x0 === 2 && shapePath(lines, 0) !== null,
        cells: cells.map(({row, column, value}) => [row, column, String(value)]),
    };
}"""


def test_every_part_the_previews_reach_is_where_they_look(page):
    page.set_content("<!doctype html><html><body></body></html>")
    page.add_script_tag(path=str(attention_explorer.plotly_js_source()))
    # The adapter's functions as globals of the page (its exports, as a classic script).
    page.add_script_tag(content=re.sub(r"^export ", "", ADAPTER.read_text(), flags=re.M))
    page.evaluate(PLOTS)
    found = page.evaluate(CHECKS)
    assert found["drawn"]
    assert found["z"] == [[1, 2, 3], [4, 5, 6]]
    assert found["colorscale"] > 2
    assert found["image"]
    assert found["bar"]
    assert found["hidden"] == [True, True, True]  # what a preview hides while it paints
    assert found["title"].startswith("Weights")
    assert found["bars"] == 3
    assert found["top"] < 0.01  # a bar's path ends at its value, by the y axis's c2p
    assert _numbers(found["redrawn"]) == _numbers(found["original"])
    assert found["lines"] == 2
    assert found["second"]
    assert found["shape"]
    assert sorted(found["cells"]) == [[0, 0, "a"], [0, 1, "0.5"], [1, 0, "b"], [1, 1, "0.25"]]
    assert page.errors == []


def _numbers(path):
    return [round(float(x), 2) for x in re.findall(r"-?[\d.]+(?:e-?\d+)?", path)]
