#!/usr/bin/env bash
# Build (or refresh) the project's virtual environment: .venv (Kilted) or .venv-jazzy.
#
#   tools/bootstrap.sh            runtime: ROS 2 wheels, ONNX Runtime, OpenCV, numpy
#   tools/bootstrap.sh --test     + colcon, pytest, onnx and the ament linters
#   tools/bootstrap.sh --train    + torch 2.13.0 (CPU build) for training
#   tools/bootstrap.sh --serve    + .venv-serve: the local Triton server of `serve` (nvidia-pytriton,
#                                   numpy<2, so its own venv; SERVE_VENV overrides); --test does it too
#
# ROS_DISTRO picks the ROS 2 wheels (requirements/ros-$ROS_DISTRO.txt): kilted (the default,
# in .venv) or jazzy (in .venv-jazzy); the two cannot share a venv. VENV overrides the folder.
# Idempotent: each requirement set is installed once and re-installed only when its file changes.
# Only package registries are contacted.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
distro=${ROS_DISTRO:-kilted}
case "$distro" in
  kilted) default_venv=$here/.venv ;;
  jazzy) default_venv=$here/.venv-jazzy ;;
  *) echo "bootstrap: ROS_DISTRO=$distro has no PyPI wheels here; use ROS_DISTRO=kilted" \
       "(the default) or ROS_DISTRO=jazzy, or build with colcon in a sourced ROS workspace" >&2
     exit 2 ;;
esac
venv=${VENV:-$default_venv}
python=${PYTHON:-python3.11}
sets=(ros-"$distro" runtime)
serve=0
for arg in "$@"; do
  case "$arg" in
    --test) sets+=(test); serve=1 ;;
    --train) sets+=(train) ;;
    --serve) serve=1 ;;
    *) echo "bootstrap: unknown option $arg (use --test, --train, --serve)" >&2; exit 2 ;;
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
# The ROS 2 wheels of two distros cannot share a venv: refuse one that holds another's.
for other in "$venv"/lib/python*/site-packages/ros_*_rclpy-*.dist-info; do
  [ -e "$other" ] || continue
  other=${other##*/ros_}; other=${other%%_rclpy-*}
  if [ "$other" != "$distro" ]; then
    echo "bootstrap: $venv holds the ROS 2 $other wheels, not $distro; use another VENV" \
      "or remove $venv" >&2
    exit 2
  fi
done

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

# The server venv: the tritonserver binary of the nvidia-pytriton wheel (Linux, glibc 2.35+).
if [ "$serve" = 1 ]; then
  serve_venv=${SERVE_VENV:-$here/.venv-serve}
  req="$here/requirements/serve.txt"
  sum=$(sha256sum "$req" | cut -c1-16)
  if [ ! -f "$serve_venv/.installed-serve-$sum" ]; then
    if [ ! -x "$serve_venv/bin/python" ]; then
      echo "bootstrap: creating $serve_venv (the local inference server's venv)"
      "$python" -m venv "$serve_venv"
      touch "$serve_venv/COLCON_IGNORE"
    fi
    echo "bootstrap: installing requirements/serve.txt into $serve_venv"
    if "$serve_venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"; then
      rm -f "$serve_venv"/.installed-serve-*
      touch "$serve_venv/.installed-serve-$sum"
    else
      # Not fatal: the server tests then skip, saying why.
      echo "bootstrap: could not install the server venv; the triton server tests will skip" >&2
    fi
  fi
fi
