#!/usr/bin/env bash
# Build the partial plotly.js the app serves: only the traces its figures use.
#
#   bash scripts/build_plotly.sh
#
# A development script (it needs Node.js and npm; the app and its tests do not): it builds,
# for the plotly.js version inside the installed `plotly` Python package, a bundle of
# plotly.js's core (scatter, axes, hover, shapes, colour bars, the mode bar) and the bar,
# heatmap, image and table traces, and writes it to attention_explorer/vendor/, where the
# component takes it instead of the package's full plotly.min.js when the versions match
# (attention_explorer/__init__.py). The full bundle is 4.8 MB; the browser's evaluation of
# it was most of a first load's gap to a trivial app's (docs/benchmarks.md).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_venv.sh  # sets $python: the environment run.sh or test.sh installed the app in
version="$("$python" -c 'import attention_explorer as a; print(a.plotly_js_version(a.PLOTLY_JS))')"
traces="$("$python" -c 'import attention_explorer as a; print(" ".join(a.PARTIAL_TRACES))')"
out="attention_explorer/vendor/plotly-${version}.partial.min.js"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cd "$work"
npm init -y >/dev/null
npm install --no-audit --no-fund --silent "plotly.js@${version}" esbuild buffer stream-browserify
{
  echo "var Plotly = require('plotly.js/lib/core');"
  echo "Plotly.register(["
  for trace in $traces; do
    [ "$trace" = scatter ] || echo "  require('plotly.js/lib/${trace}'),"  # scatter is core's
  done
  echo "]);"
  echo "module.exports = Plotly;"
} >entry.js
# As plotly.js's own build (its esbuild-config.js), less the WebGL and map plugins these
# traces do not need; plotly.js's CSS is JavaScript of its own (the maps' CSS is dropped).
npx esbuild entry.js --bundle --minify --format=iife --global-name=Plotly --target=es2016 \
  --define:global=window --define:define.amd=false --alias:stream=stream-browserify \
  --banner:js="/** plotly.js v${version} (MIT), partial: ${traces}. Built by scripts/build_plotly.sh. */" \
  --footer:js="window.Plotly = Plotly;" \
  --log-level=warning --outfile=bundle.js
cd - >/dev/null
cp "$work/bundle.js" "$out"
echo "wrote $out ($(wc -c <"$out") bytes)"
