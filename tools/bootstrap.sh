#!/usr/bin/env bash
# Build (or refresh) the project's virtual environment in .venv.
#
#   tools/bootstrap.sh            runtime: ROS 2 Kilted wheels, ONNX Runtime, OpenCV, numpy
#   tools/bootstrap.sh --test     + colcon, pytest, onnx and the ament linters
#   tools/bootstrap.sh --train    + torch 2.13.0 (CPU build) for training
#
# Idempotent: each requirement set is installed once and re-installed only when its file changes.
# Only package registries are contacted.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
venv=${VENV:-$here/.venv}
python=${PYTHON:-python3.11}
sets=(runtime)
for arg in "$@"; do
  case "$arg" in
    --test) sets+=(test) ;;
    --train) sets+=(train) ;;
    *) echo "bootstrap: unknown option $arg (use --test, --train)" >&2; exit 2 ;;
  esac
done

if ! command -v "$python" >/dev/null 2>&1; then
  echo "bootstrap: $python not found; install Python 3.11 or set PYTHON=/path/to/python3.11" >&2
  exit 1
fi

if [ ! -x "$venv/bin/python" ]; then
  echo "bootstrap: creating $venv with $("$python" --version)"
  if ! "$python" -m venv "$venv" 2>/dev/null; then
    rm -rf "$venv"
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "bootstrap: venv module missing; installing python3-venv with apt-get"
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv python3.11-venv \
        || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv
      "$python" -m venv "$venv"
    else
      echo "bootstrap: '$python -m venv' failed; install python3.11-venv (apt) and retry" >&2
      exit 1
    fi
  fi
  # colcon must not descend into the venv looking for packages.
  touch "$venv/COLCON_IGNORE"
  "$venv/bin/python" -m pip install -q --upgrade pip
fi

for s in "${sets[@]}"; do
  req="$here/requirements/$s.txt"
  sum=$(sha256sum "$req" | cut -c1-16)
  stamp="$venv/.installed-$s-$sum"
  if [ ! -f "$stamp" ]; then
    echo "bootstrap: installing requirements/$s.txt"
    # setuptools<80 keeps colcon-core happy even when torch would pull a newer one.
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req" 'setuptools<80'
    rm -f "$venv"/.installed-"$s"-*
    touch "$stamp"
  fi
done
