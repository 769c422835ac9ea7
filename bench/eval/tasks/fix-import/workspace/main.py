from helpers import slugify

print(slugify("My First Post"))
