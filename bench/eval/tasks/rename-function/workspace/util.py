def foo(x):
    """Twice x."""
    return 2 * x
