from strutil import slugify

for title in ["Hello, World!", "Release 2.0 notes"]:
    print(slugify(title))
