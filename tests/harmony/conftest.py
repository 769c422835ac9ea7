"""The parser tests' hypothesis profiles, shared rather than copied.

Importing tests/parsing/conftest.py registers `ci` (10,000 examples) and `dev` and loads
the one HYPOTHESIS_PROFILE names, also when only tests/harmony is collected. Under
pytest it is already imported, so this is a no-op there.
"""

from tests.parsing import conftest as _profiles  # noqa: F401
