"""bosun: an agentic coding harness for local models.

How the packages fit together (and which module owns what) is in the manual,
docs/development.md, "How the code is laid out"; tests/test_architecture.py holds the seams.
"""

__version__ = "0.1.0"
