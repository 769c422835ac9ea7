from hello import greet


def test_greet() -> None:
    assert greet("Ada") == "Hello, Ada!"
    assert greet() == "Hello, world!"
