#!/usr/bin/env python3
"""First-turn layout A/B for the whole protocol (benches/README.md, "the first message's layout").

Sends the agent's own first prompt to a running `bellows serve`, in one of three layouts, at
temperature 0; applies the reply's file blocks (and DELETE/MOVE lines) to a fresh copy of the
task's repo and runs its verify.sh. It judges one reply only, nothing else of the agent.

Usage: first-turn.py PORT VARIANT TASK...
  VARIANT  v0 (one message, as the agent sends it), v1 (files, an acknowledgement, then the
           task), v3 (v1 with "Do not write out a file you leave as it is")
  BELLOWS_SYSTEM   a file holding the whole protocol's system prompt (auto mode)
  BELLOWS_KEPT     the glob of a `bellows agent bench --keep` run's task copies, with `{task}`
                   (e.g. '/tmp/bellows-bench-32546-*-{task}'): each task's first message is read
                   from its journal, so it is the agent's byte for byte
Replies go to $OUT (default /tmp/first-turn/VARIANT/TASK.txt)."""
import json, os, re, shutil, subprocess, sys, tempfile, time, urllib.request, glob

port, variant, tasks = sys.argv[1], sys.argv[2], sys.argv[3:]
SYSTEM = open(os.environ['BELLOWS_SYSTEM']).read()
SUITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'agent-tasks')
KEPT = os.environ['BELLOWS_KEPT']
OUT = os.environ.get('OUT', '/tmp/first-turn')
CLOSE2 = ("Reply with only the files you change or create, each with the change made: its path on a "
          "line by itself, then its complete new content in a fenced code block. Do not write out "
          "a file you leave as it is.")

def task_message(task):
    for d in glob.glob(KEPT.format(task=task)):
        for root, _, files in os.walk(d):
            if 'journal.jsonl' in files:
                return json.loads(open(os.path.join(root, 'journal.jsonl')).readline())['task_message']
    raise SystemExit(f'no journal for {task}')

def build(tm):
    head, rest = tm.split('\n\n', 1)
    task = head[len('Task: '):]
    body, again = rest.rsplit('\n\nThe task again: ', 1)
    closing = again.split('\n', 1)[1]
    if variant == 'v0':
        return [{'role': 'user', 'content': tm}]
    if variant == 'v2':
        return [{'role': 'user', 'content': tm.replace(closing, CLOSE2)}]
    if variant in ('v1', 'v3'):
        c = closing if variant == 'v1' else CLOSE2
        return [{'role': 'user', 'content': body.strip() + '\n'},
                {'role': 'assistant', 'content': 'Ok, I have the files. What should I do?'},
                {'role': 'user', 'content': f'{task}\n{c}'}]
    raise SystemExit('variant?')

BLOCK = re.compile(r'^([^\n`]+?)\n(`{3,})[^\n]*\n(.*?)^\2\s*$', re.M | re.S)

def apply(reply, repo):
    changed = []
    for m in BLOCK.finditer(reply):
        path = m.group(1).strip().strip('*`').rstrip(':')
        if ' ' in path and not path.startswith("'"):
            continue
        path = path.strip("'")
        content = m.group(3)
        p = os.path.join(repo, path)
        old = open(p).read() if os.path.isfile(p) else None
        if old == content:
            continue
        os.makedirs(os.path.dirname(p) or '.', exist_ok=True)
        if os.path.isdir(p):
            continue
        open(p, 'w').write(content)
        changed.append(path)
    for line in reply.splitlines():
        if line.startswith('DELETE '):
            p = os.path.join(repo, line[7:].strip().strip("'"))
            if os.path.isfile(p):
                os.remove(p); changed.append('-' + line[7:].strip())
        if line.startswith('MOVE ') and ' -> ' in line:
            a, b = [x.strip().strip("'") for x in line[5:].split(' -> ', 1)]
            if os.path.isfile(os.path.join(repo, a)):
                os.makedirs(os.path.dirname(os.path.join(repo, b)) or '.', exist_ok=True)
                shutil.move(os.path.join(repo, a), os.path.join(repo, b)); changed.append(f'{a}->{b}')
    return changed

total = solved = 0
gen = 0
for task in tasks:
    msgs = [{'role': 'system', 'content': SYSTEM}] + build(task_message(task))
    req = json.dumps({'model': 'x', 'messages': msgs, 'temperature': 0, 'max_tokens': 1024}).encode()
    t0 = time.time()
    r = json.load(urllib.request.urlopen(urllib.request.Request(
        f'http://127.0.0.1:{port}/v1/chat/completions', req, {'Content-Type': 'application/json'}), timeout=900))
    reply = r['choices'][0]['message']['content'] or ''
    gen += r['usage']['completion_tokens']
    d = tempfile.mkdtemp(prefix='ft-')
    shutil.copytree(f'{SUITE}/{task}/repo', f'{d}/repo')
    changed = apply(reply, f'{d}/repo')
    ok = subprocess.run(['sh', f'{SUITE}/{task}/verify.sh'], cwd=f'{d}/repo', capture_output=True).returncode == 0
    total += 1; solved += ok
    os.makedirs(f'{OUT}/{variant}', exist_ok=True)
    open(f'{OUT}/{variant}/{task}.txt', 'w').write(reply)
    print(f'{variant} {task:22s} {"SOLVED" if ok else "no":6s} changed={changed} {time.time()-t0:.0f}s', flush=True)
print(f'{variant}: {solved}/{total} solved, {gen} generated')
