def answer():
    return 6 * 7


print(answer())
