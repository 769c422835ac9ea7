from count import count_to


def test_count():
    assert count_to(3) == [1, 2, 3]
    assert count_to(1) == [1]
    assert count_to(0) == []


if __name__ == "__main__":
    test_count()
    print("ok")
