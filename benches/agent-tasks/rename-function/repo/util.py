def get_nme(user):
    return user["name"]
