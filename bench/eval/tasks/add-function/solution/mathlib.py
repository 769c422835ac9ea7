def add(a, b):
    """The sum of a and b."""
    return a + b


def multiply(a, b):
    """The product of a and b."""
    return a * b
