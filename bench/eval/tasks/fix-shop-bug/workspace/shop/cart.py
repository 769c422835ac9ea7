from shop.prices import price_of


def total(items):
    """Sum of price times quantity over (item, quantity) pairs."""
    result = 0
    for item, qty in items:
        result += price_of(item) + qty
    return result
