from shop.cart import total


def test_total():
    assert total([("apple", 3), ("melon", 2)]) == 29
    assert total([]) == 0


if __name__ == "__main__":
    test_total()
    print("ok")
