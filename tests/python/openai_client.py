"""Drives a running bellows server with the official `openai` client, unmodified.

Usage: openai_client.py scripted|real  (base URL in $BELLOWS_TEST_BASE_URL)

`scripted` runs against the scripted engine: tests/openai_client.rs queues the replies in the
order the checks below ask for them, so every value can be compared exactly. `real` runs
against a real model (SmolLM2-135M): replies vary, so only their shape is checked, and tool
calls are forced with `tool_choice` so the grammar guarantees a decodable call.

Exits non-zero with a message on the first failed check; prints one line per check passed.
"""

import json
import os
import sys

import openai

BASE_URL = os.environ["BELLOWS_TEST_BASE_URL"]
API_KEY = os.environ.get("BELLOWS_TEST_API_KEY", "unused")
MODEL = os.environ["BELLOWS_TEST_MODEL"]

client = openai.OpenAI(base_url=BASE_URL, api_key=API_KEY, max_retries=0, timeout=120)

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"location": {"type": "string", "maxLength": 32}},
            "required": ["location"],
        },
    },
}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


def check(cond, what):
    if not cond:
        print(f"FAILED: {what}", file=sys.stderr)
        sys.exit(1)


def passed(name):
    print(f"ok: {name}", flush=True)


def assemble(stream):
    """Accumulates a chat stream the way client code does; returns (content, calls, finish, usage)."""
    content, calls, finish, usage = "", {}, None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            d = choice.delta
            if d.content:
                content += d.content
            for tc in d.tool_calls or []:
                if tc.index not in calls:
                    check(tc.id and tc.function and tc.function.name, f"first fragment has id and name: {tc}")
                    calls[tc.index] = {"id": tc.id, "name": tc.function.name, "arguments": ""}
                if tc.function and tc.function.arguments:
                    calls[tc.index]["arguments"] += tc.function.arguments
            if choice.finish_reason:
                finish = choice.finish_reason
    return content, [calls[i] for i in sorted(calls)], finish, usage


def scripted():
    r = client.chat.completions.create(model=MODEL, messages=ASK)
    check(r.choices[0].message.content == "Hello from bellows.", f"content: {r}")
    check(r.choices[0].finish_reason == "stop", f"finish: {r}")
    check(r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0, f"usage: {r.usage}")
    check(r.usage.prompt_tokens_details.cached_tokens == 0, f"cached: {r.usage}")
    passed("chat non-stream")

    s = client.chat.completions.create(
        model=MODEL, messages=ASK, stream=True, stream_options={"include_usage": True}
    )
    content, calls, finish, usage = assemble(s)
    check(content == "Streaming works fine.", f"streamed content: {content!r}")
    check(calls == [] and finish == "stop", f"finish: {finish}")
    check(usage is not None and usage.total_tokens == usage.prompt_tokens + usage.completion_tokens, f"usage: {usage}")
    passed("chat stream")

    r = client.chat.completions.create(model=MODEL, messages=ASK, tools=[WEATHER])
    msg = r.choices[0].message
    check(r.choices[0].finish_reason == "tool_calls", f"finish: {r}")
    check(len(msg.tool_calls) == 1, f"calls: {msg}")
    call = msg.tool_calls[0]
    check(call.type == "function" and call.id.startswith("call_"), f"call: {call}")
    check(call.function.name == "get_weather", f"name: {call}")
    check(json.loads(call.function.arguments) == {"location": "Paris"}, f"arguments: {call}")
    passed("tools non-stream")

    s = client.chat.completions.create(model=MODEL, messages=ASK, tools=[WEATHER], stream=True)
    content, calls, finish, _ = assemble(s)
    check(finish == "tool_calls", f"finish: {finish}")
    check(len(calls) == 1 and calls[0]["name"] == "get_weather", f"calls: {calls}")
    check(json.loads(calls[0]["arguments"]) == {"location": "Paris"}, f"arguments: {calls}")
    check(content.strip() == "", f"no markup leaked into content: {content!r}")
    passed("tools stream")

    # The assistant's call and the tool result go back in, as agent loops do.
    follow = ASK + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": calls[0]["id"], "type": "function",
             "function": {"name": "get_weather", "arguments": calls[0]["arguments"]}}]},
        {"role": "tool", "tool_call_id": calls[0]["id"], "content": "sunny, 21 C"},
    ]
    r = client.chat.completions.create(model=MODEL, messages=follow, tools=[WEATHER])
    check(r.choices[0].message.content == "It is sunny in Paris.", f"follow-up: {r}")
    passed("tool result round trip")

    models = client.models.list()
    check([m.id for m in models.data] == [MODEL], f"models: {models}")
    passed("models")

    c = client.completions.create(model=MODEL, prompt="Once upon", max_tokens=8)
    check(c.choices[0].text == "a time", f"completion: {c}")
    passed("completions")

    # Clients send model names of their own; one model is loaded and serves every name.
    r = client.chat.completions.create(model="gpt-4o", messages=ASK)
    check(r.model == "gpt-4o" and r.choices[0].message.content == "Served under any name.", f"any name: {r}")
    passed("any model name")

    # A call whose arguments fail the schema never reaches a stock accumulator as a call: its
    # text comes back as content, and the finish reason is "stop".
    s = client.chat.completions.create(model=MODEL, messages=ASK, tools=[WEATHER], stream=True)
    content, calls, finish, _ = assemble(s)
    check(calls == [] and finish == "stop", f"invalid call withheld: {calls} {finish}")
    check('"location": 5' in content, f"its text is content: {content!r}")
    passed("invalid call withheld")

    # Several choices from one request, each with its index; usage counts the prompt once.
    r = client.chat.completions.create(model=MODEL, messages=ASK, n=2)
    check([c.index for c in r.choices] == [0, 1], f"n=2: {r.choices}")
    check(all(c.message.content for c in r.choices), f"n=2 contents: {r.choices}")
    passed("n choices")

    try:
        client.chat.completions.create(model=MODEL, messages=ASK, n=17)
        check(False, "n=17 must fail")
    except openai.BadRequestError as e:
        check(e.status_code == 400 and e.param == "n", f"400: {e}")
    passed("errors")


def real():
    r = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "What is the capital of France?"}],
        max_tokens=24, temperature=0,
    )
    check(isinstance(r.choices[0].message.content, str) and r.choices[0].message.content.strip(), f"content: {r}")
    check(r.choices[0].finish_reason in ("stop", "length"), f"finish: {r}")
    check(r.usage.completion_tokens > 0, f"usage: {r.usage}")
    passed("real chat non-stream")

    s = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Name three colours."}],
        max_tokens=24, temperature=0, stream=True, stream_options={"include_usage": True},
    )
    content, _, finish, usage = assemble(s)
    check(content.strip() and finish in ("stop", "length"), f"stream: {content!r} {finish}")
    check(usage is not None and usage.completion_tokens > 0, f"usage: {usage}")
    passed("real chat stream")

    for stream in (False, True):
        kwargs = dict(model=MODEL, messages=ASK, tools=[WEATHER], max_tokens=96, temperature=0,
                      tool_choice={"type": "function", "function": {"name": "get_weather"}})
        if stream:
            _, calls, finish, _ = assemble(client.chat.completions.create(stream=True, **kwargs))
        else:
            r = client.chat.completions.create(**kwargs)
            finish = r.choices[0].finish_reason
            calls = [{"name": c.function.name, "arguments": c.function.arguments}
                     for c in r.choices[0].message.tool_calls or []]
        check(finish == "tool_calls" and len(calls) == 1, f"forced call (stream={stream}): {calls} {finish}")
        check(calls[0]["name"] == "get_weather", f"name: {calls}")
        args = json.loads(calls[0]["arguments"])
        check(isinstance(args.get("location"), str), f"arguments: {args}")
        passed(f"real forced tool call (stream={stream}): {args}")


if __name__ == "__main__":
    {"scripted": scripted, "real": real}[sys.argv[1]]()
