"""megakittens: compile a whole PyTorch graph into one persistent megakernel.

    fn = megakittens.compile(model)        # or @megakittens.compile, or torch.compile(backend="megakittens")

Importing the package registers the custom ops ``torch.ops.megakittens.*`` and the Dynamo backend
"megakittens".
"""
from megakittens import ops  # noqa: F401  (registers torch.ops.megakittens.*)
from megakittens._C import CompileError, DeadlockError, RaceError
from megakittens.backend import megakittens_backend
from megakittens.interface import compile
from megakittens.sdpa_math import MathAttentionWarning

__version__ = "0.1.0"
__all__ = ["compile", "CompileError", "DeadlockError", "RaceError", "MathAttentionWarning", "megakittens_backend",
           "__version__"]


def _register_backend() -> None:
    # The package is also a `torch_dynamo_backends` entry point. When Dynamo found that entry point it
    # registers the backend itself on lookup (and would reject a duplicate), so only register when it
    # has not seen the entry point.
    from torch._dynamo.backends import registry
    if "megakittens" in getattr(registry, "_COMPILER_FNS", {}):
        return
    if getattr(registry, "_BACKENDS", {}).get("megakittens") is not None:
        return
    registry.register_backend(megakittens_backend, name="megakittens")


_register_backend()
