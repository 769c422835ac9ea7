def count_to(n):
    """The numbers 1..n inclusive."""
    return list(range(1, n + 1))
