from util import bar


def report(values):
    return [bar(v) for v in values]


print(report([1, 2]))
