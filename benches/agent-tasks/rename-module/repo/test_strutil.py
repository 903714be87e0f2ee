from strutil import slugify, title_case

assert slugify("Hello, World!") == "hello-world"
assert title_case("big news") == "Big News"
print("ok")
