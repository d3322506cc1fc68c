"""Kernel algebra typed by a user: ``"se + periodic * linear"`` -> Sum(SE, Product(Periodic, Linear)).

The text is parsed with :mod:`ast` and walked once; nothing is passed to eval/exec/compile. The
grammar is a whitelist:

* a registered kernel name (:data:`gpexplorer.kernels.KERNELS`: ``se``, ``matern12``, ``matern32``,
  ``matern52``, ``rq``, ``periodic``, ``linear``; one on images, such as ``convolutional``, or
  whose constructor needs options is refused with a message), each occurrence a new kernel with
  its own hyperparameters at their defaults;
* ``+`` (a sum of kernels is a kernel: independent GPs added) and ``*`` (a product: the product of
  two covariance functions is positive semi-definite, Schur's product theorem), parentheses.

Anything else (numbers, calls, attributes, other operators) is refused naming the piece. At most
:data:`MAX_LENGTH` characters and :data:`MAX_TERMS` kernels.
"""

from __future__ import annotations

import ast

from gpexplorer.kernels.base import Kernel, Product, Sum

__all__ = ["parse_kernel", "MAX_LENGTH", "MAX_TERMS"]

MAX_LENGTH = 120
MAX_TERMS = 8


def parse_kernel(text, registry=None) -> Kernel:
    """The kernel an expression such as ``"se * periodic + linear"`` names (module docstring)."""
    if registry is None:
        from gpexplorer.kernels import KERNELS as registry
    if not isinstance(text, str) or not text.strip():
        raise ValueError("a kernel expression is needed, such as 'se + periodic * linear'")
    if len(text) > MAX_LENGTH:
        raise ValueError(f"the kernel expression is {len(text)} characters long; at most {MAX_LENGTH} are allowed")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        raise ValueError(f"cannot read the kernel expression {text!r}: use kernel names joined by + and *, "
                         "with parentheses") from None
    count = [0]
    return _build(tree.body, registry, count, text)


def _build(node, registry, count, text):
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
        left = _build(node.left, registry, count, text)
        right = _build(node.right, registry, count, text)
        return Sum(left, right) if isinstance(node.op, ast.Add) else Product(left, right)
    if isinstance(node, ast.Name):
        count[0] += 1
        if count[0] > MAX_TERMS:
            raise ValueError(f"the kernel expression has more than {MAX_TERMS} kernels")
        names = {n: cls for n, cls in registry.items() if cls.input_shape is None}
        if node.id not in names:
            why = "takes images, not vectors" if node.id in dict(registry.items()) else "is unknown"
            raise ValueError(f"kernel {node.id!r} {why}; the kernels an expression may use are {', '.join(names)}")
        try:
            return names[node.id]()
        except (TypeError, ValueError) as err:
            raise ValueError(f"kernel {node.id!r} needs options ({err}); it cannot be used in an expression") from None
    piece = ast.get_source_segment(text.strip(), node) or type(node).__name__
    raise ValueError(f"{piece!r} is not allowed in a kernel expression: only kernel names, + and * "
                     "(and parentheses)")
