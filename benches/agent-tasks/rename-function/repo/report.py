import util


def line(user):
    return "user: " + util.get_nme(user)
