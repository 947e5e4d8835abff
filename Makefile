# The README's two commands: `make demo` and `make test`. Each bootstraps .venv when needed.
SHELL := /bin/bash
VENV ?= .venv
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
	colcon build --paths . --build-base build --install-base install \
	  --event-handlers console_cohesion- summary-

test: build
	colcon test --paths . --build-base build --install-base install \
	  --event-handlers console_direct+ summary- --return-code-on-test-failure \
	  --pytest-args -ra -p no:cacheprovider
	colcon test-result --test-result-base build --verbose

clean:
	rm -rf build install log demo_output
