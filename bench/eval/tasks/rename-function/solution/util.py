def bar(x):
    """Twice x."""
    return 2 * x
