import strutil


def heading(text):
    return strutil.title_case(text) + "\n" + "=" * len(text)
