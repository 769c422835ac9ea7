import sys


def main(argv):
    args = [a for a in argv[1:] if a != "--shout"]
    name = args[0] if args else "world"
    line = f"Hello, {name}!"
    print(line.upper() if "--shout" in argv else line)


if __name__ == "__main__":
    main(sys.argv)
