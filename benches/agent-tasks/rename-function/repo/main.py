from util import get_nme

print(get_nme({"name": "ada"}))
