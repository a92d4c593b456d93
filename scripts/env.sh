# Sourced by the scripts: the project's virtual environment and Jupyter's data folder.
# Everything is installed into .venv (never the system interpreter: Debian's and Ubuntu's
# system Pythons refuse `pip install` outside a venv, PEP 668). PYTHON picks the interpreter
# the venv is created from (default python3).
VENV="$PWD/.venv"
PY="$VENV/bin/python"
# The kernel spec lives in the venv (ipykernel install --sys-prefix); JUPYTER_PATH puts it
# ahead of any user-level python3 spec that points at another interpreter.
export JUPYTER_PATH="$VENV/share/jupyter${JUPYTER_PATH:+:$JUPYTER_PATH}"
export PLOOMBER_STATS_ENABLED=false
