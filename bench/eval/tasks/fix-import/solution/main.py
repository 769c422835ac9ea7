from helper import slugify

print(slugify("My First Post"))
