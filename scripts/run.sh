#!/usr/bin/env bash
# Install everything and start the app: the README's run command.
#
# It installs into the active virtual environment if there is one, else into .venv in
# this folder, which it creates on the first run (scripts/_venv.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_venv.sh

install_app
echo "Starting the app (Streamlit)" >&2
exec "$python" -m streamlit run app/main.py "$@"
