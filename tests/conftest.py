import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))  # tests/common.py

from common import rel_err  # noqa: E402,F401  (re-exported for tests that import it from conftest)


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each test compiles from scratch: no Dynamo cache entries or recompile limits carried over."""
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.fixture(autouse=True)
def _seeded():
    torch.manual_seed(0)
