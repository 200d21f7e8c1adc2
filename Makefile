# megakittens: `make run` sets up and runs the main job, `make test` sets up and runs every test.
PYTHON ?= python3
PIP := $(PYTHON) -m pip
BUILD_TESTS := build/cpp-tests
# torch 2.13.0 is the CPU build on this machine's disk; a GPU machine keeps the torch it has.
TORCH_SPEC ?= torch==2.13.0

.PHONY: setup setup-system setup-python build run test test-cpp test-py test-gpu clean

setup: setup-system setup-python

# System packages: GoogleTest for the C++ unit tests, graphviz for save_dag pictures (Debian/apt).
setup-system:
	@if [ ! -f /usr/include/gtest/gtest.h ] || ! command -v dot >/dev/null; then \
	  if command -v apt-get >/dev/null; then \
	    (apt-get update -qq && apt-get install -y -qq libgtest-dev graphviz) >/dev/null || \
	      echo "warning: apt-get could not install libgtest-dev/graphviz"; \
	  else echo "warning: no apt-get; install GoogleTest and graphviz by hand"; fi; fi

setup-python:
	@$(PYTHON) -c "import torch" 2>/dev/null || $(PIP) install -q "$(TORCH_SPEC)"
	$(PIP) install -q "scikit-build-core>=0.10" "nanobind>=2.4" pytest numpy graphviz "nvidia-cuda-nvrtc==13.0.88" transformers
	$(PIP) install -q --no-build-isolation --no-deps -e .

# Rebuild the extension after a C++ change (editable install; scikit-build-core reuses build/).
build:
	$(PIP) install -q --no-build-isolation --no-deps -e .

run: setup
	$(PYTHON) examples/mlp.py
	$(PYTHON) examples/llama.py --config tiny

test-cpp:
	cmake -S . -B $(BUILD_TESTS) -G Ninja -DMK_BUILD_TESTS=ON -DMK_BUILD_PYTHON=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD_TESTS)
	ctest --test-dir $(BUILD_TESTS) --output-on-failure -j2

test-py:
	$(PYTHON) -m pytest -q tests

test-gpu:
	$(PYTHON) -m pytest -q -m gpu tests

test: setup test-cpp test-py

clean:
	rm -rf build
