from . import optimizer  # noqa: F401
from .optimizer import Optimizer, SGD, AdamW  # noqa: F401
