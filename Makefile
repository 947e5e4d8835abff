# The README's two commands: `make demo` and `make test`. Each bootstraps its venv when needed:
# .venv with the ROS 2 Kilted wheels (the default), or with ROS_DISTRO=jazzy .venv-jazzy, and
# colcon's build/install/log bases per distro (build, install, log for Kilted; *-jazzy).
SHELL := /bin/bash
export ROS_DISTRO := $(or $(ROS_DISTRO),kilted)
ifeq ($(ROS_DISTRO),kilted)
SUFFIX :=
else
SUFFIX := -$(ROS_DISTRO)
endif
VENV ?= .venv$(SUFFIX)
export VENV
BASES := --build-base build$(SUFFIX) --install-base install$(SUFFIX)
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
# Keep DDS discovery on this machine: no multicast onto the network.
export ROS_AUTOMATIC_DISCOVERY_RANGE ?= LOCALHOST
export PYTHONUNBUFFERED := 1

.PHONY: demo test build lint venv venv-test venv-train clean

venv:
	@tools/bootstrap.sh

venv-test:
	@tools/bootstrap.sh --test --train

venv-train:
	@tools/bootstrap.sh --train

demo: venv
	python -m freespace_seg demo $(DEMO_ARGS)

build: venv-test
	colcon --log-base log$(SUFFIX) build --paths . $(BASES) \
	  --event-handlers console_cohesion- summary-

test: build
	colcon --log-base log$(SUFFIX) test --paths . $(BASES) \
	  --event-handlers console_direct+ summary- --return-code-on-test-failure \
	  --pytest-args -ra -p no:cacheprovider $(PYTEST_ARGS)
	colcon --log-base log$(SUFFIX) test-result --test-result-base build$(SUFFIX) --verbose

clean:
	rm -rf build install log build-jazzy install-jazzy log-jazzy demo_output
