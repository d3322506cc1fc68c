"""The README's reliability table is data: each row's limit is the value of the constant it names.

A limit changed in the code without the README (or the reverse) fails here, naming the row."""

from __future__ import annotations

import importlib
import pathlib
import re

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
NUMBER = re.compile(r"([0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?)\s*(GiB)?")


def reliability_rows():
    text = README.read_text()
    section = text.split("## Reliability: what is refused and why", 1)[1].split("\n## ", 1)[0]
    rows = [re.split(r"(?<!\\)\|", line)[1:-1] for line in section.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in row] for row in rows[1:]]  # without the header row


def limit_of(cell):
    number, unit = NUMBER.search(cell).groups()
    return float(number) * (1024 ** 3 if unit else 1)


def constant(path):
    module, name = path.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


def test_the_reliability_table_states_the_limits_the_code_enforces():
    rows = reliability_rows()
    assert len(rows) >= 10
    for what, limit, constants, _why in rows:
        names = re.findall(r"`([^`]+)`", constants)
        assert names, f"row {what!r} names no constant"
        for name in names:
            assert float(constant(name)) == limit_of(limit), f"row {what!r}: README says {limit}, {name} = {constant(name)}"


def test_the_limits_are_enforced_with_a_message_that_names_the_argument():
    """Spot checks that the constants are the ones the checks use (a renamed, unused constant
    would otherwise pass the table test)."""
    import numpy as np
    import pytest

    from gpexplorer.kernels import SquaredExponential
    from gpexplorer.variational.savigp import SparseVariationalGP

    X, y = np.linspace(0, 1, 10)[:, None], np.zeros(10)
    with pytest.raises(ValueError, match="X has values up to"):
        SparseVariationalGP(X * 1e101, y, SquaredExponential(), Z=3, likelihood="gaussian")
    with pytest.raises(ValueError, match="at most 100"):
        SparseVariationalGP(X, y, SquaredExponential(), Z=3, likelihood="gaussian", posterior=("mog", 101))
