import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))  # tests/common.py

from common import rel_err  # noqa: E402,F401  (re-exported for tests that import it from conftest)


def pytest_configure(config):
    """Stop at once when `import megakittens` loads another checkout's sources (an editable install is one
    per Python: `make` in a second checkout re-points it): these tests would run against that code."""
    import importlib.util
    spec = importlib.util.find_spec("megakittens")
    if spec is None or spec.origin is None:
        return
    root = os.path.dirname(os.path.dirname(os.path.abspath(spec.origin)))
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if os.path.isfile(os.path.join(root, "pyproject.toml")) and os.path.realpath(root) != os.path.realpath(here):
        pytest.exit(f"megakittens is imported from another checkout, {root}, not this one ({here}): run `make test` "
                    f"here (it re-installs this checkout), or give each checkout its own venv (README)", returncode=4)


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
