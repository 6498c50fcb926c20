#!/usr/bin/env bash
# Install what the tests need and run them: the README's test commands and CI's.
#
#   bash scripts/test.sh            the whole suite, every tier in tests/ (what CI runs)
#   bash scripts/test.sh --fast     the fast tier: tests/engine, tests/app, tests/pages
#
# The fast tier drives no browser, starts no HAProxy and builds no virtual environment, so
# it needs nothing but the app and its test tools. Both run on every core (pytest-xdist, at
# most 4 workers); the whole suite also needs Debian's Chromium and HAProxy (below).
#
# The tests run in the same Python as the app: the active virtual environment, else .venv
# in this folder, created on the first run (scripts/_venv.sh). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_venv.sh

fast=false
if [[ ${1:-} == --fast ]]; then
    fast=true
    shift
fi

install_app "[test]"

if $fast; then
    exec "$python" -m pytest tests/engine tests/app tests/pages -n auto --maxprocesses 4 "$@"
fi

# The browser tests drive Debian's Chromium, the class test Debian's HAProxy, the
# JavaScript's tests Node (tests/app/test_javascript.py, in the fast tier too): installed
# with apt-get when missing and this user may. Without them those tests are skipped, or
# fail when CI is set.
export PATH=$PATH:/usr/sbin:/sbin  # where Debian puts haproxy; a user's PATH may lack it
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v haproxy >/dev/null 2>&1 || missing+=(haproxy)
command -v node >/dev/null 2>&1 || missing+=(nodejs)  # the JavaScript's tests (tests/js)
if ((${#missing[@]})); then
    echo "installing ${missing[*]} (apt-get)" >&2
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; }; then
        echo "Could not install ${missing[*]} with apt-get (it needs root): the tests that need them are skipped." >&2
    fi
fi

# Every core: the browser tier in two halves on two workers, in order, the rest beside them
# (tests/conftest.py).
exec "$python" -m pytest -n auto --maxprocesses 4 "$@"
