from util import bar

print(bar(21))
