from util import foo

print(foo(21))
