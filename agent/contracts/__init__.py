"""Falsification contracts: every behavioural promise in contracts/*.yaml names the
tests that would falsify it, and the checker proves those tests can fail.

schema.py reads and checks the files (yaml_lines.py keeps line numbers for messages);
validate.py checks them against the tree; check.py runs falsifiers and mutants, each in
a pytest subprocess (pytest_runs.py) with plugin.py inside it; mutants.py is the library
of named mutants; cli.py is `bosun contracts`.
"""

from agent.contracts.schema import (
    Contract,
    Falsifier,
    Mutation,
    Obligation,
    Problem,
    Validation,
    find_root,
    load,
    load_file,
)
from agent.contracts.validate import validate

__all__ = [
    "Contract",
    "Falsifier",
    "Mutation",
    "Obligation",
    "Problem",
    "Validation",
    "find_root",
    "load",
    "load_file",
    "validate",
]
