"""Success: cart.total multiplies price by quantity; prices untouched."""

from checklib import assert_code, fail, text, workspace

ws = workspace()

assert_code(
    ws,
    "from shop.cart import total\n"
    "assert total([('apple', 3), ('melon', 2)]) == 29\n"
    "assert total([('pear', 3)]) == 12\n"
    "assert total([]) == 0",
)
if 'PRICES = {"apple": 3, "pear": 4, "melon": 10}' not in text(ws, "shop/prices.py"):
    fail("the prices were changed instead of the bug")
