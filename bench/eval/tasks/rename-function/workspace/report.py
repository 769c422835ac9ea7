from util import foo


def report(values):
    return [foo(v) for v in values]


print(report([1, 2]))
