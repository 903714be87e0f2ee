from retry import call_with_retry, delays


def flaky(failures):
    calls = []

    def fn():
        calls.append(1)
        if len(calls) <= failures:
            raise OSError("share offline")
        return "ok"

    return fn, calls


slept = []
fn, calls = flaky(2)
assert call_with_retry(fn, 3, 1, 5, sleep=slept.append, log=lambda m: None) == "ok"
assert len(calls) == 3 and slept == [1, 2], (calls, slept)

fn, calls = flaky(9)
try:
    call_with_retry(fn, 2, 1, 5, sleep=lambda s: None, log=lambda m: None)
except OSError:
    assert len(calls) == 3
else:
    raise AssertionError("the last failure must be raised")

assert delays(5, 1, 5) == [1, 2, 4, 5, 5], delays(5, 1, 5)
print("ok")
