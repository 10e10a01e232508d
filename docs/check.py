#!/usr/bin/env python3
"""Checks the code blocks of L0's docs (run by .ci/run: python3 docs/check.py docs/*.md docs/dialects/*.md).

- Every ```mlir block must parse and verify (l0-opt FILE exits 0), unless
  preceded by <!-- invalid --> (then it must exit 1).
- A block preceded by <!-- file: NAME --> is written to NAME in the doc's
  scratch directory (one directory per doc, shared by its blocks).
- Every ```console block: lines '$ cmd' are run in that directory with bash
  (stderr merged), the other lines are the expected output, compared
  exactly, unless preceded by <!-- nocheck -->.
"""
import os, re, subprocess, sys, tempfile, shutil

# The directory holding l0-opt (default: the release build of this checkout).
BIN = os.environ.get('L0_BIN', os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'target', 'release'))

def blocks(text):
    lines = text.split('\n')
    i = 0
    pending = []
    while i < len(lines):
        l = lines[i]
        m = re.match(r'^<!--\s*(.*?)\s*-->$', l.strip())
        if m:
            pending.append(m.group(1)); i += 1; continue
        if l.startswith('```'):
            lang = l[3:].strip()
            j = i + 1
            body = []
            while j < len(lines) and not lines[j].startswith('```'):
                body.append(lines[j]); j += 1
            yield (lang, '\n'.join(body) + '\n', pending, i + 1)
            pending = []
            i = j + 1
            continue
        if l.strip():
            pending = [p for p in pending if p.startswith('file:')] if False else []
        i += 1

def run(doc):
    text = open(doc).read()
    d = tempfile.mkdtemp(prefix='docchk-')
    env = dict(os.environ, PATH=BIN + ':' + os.environ['PATH'])
    env.pop('L0_TEST_PASSES', None)
    fails = 0
    n = 0
    for lang, body, marks, line in blocks(text):
        name = None
        for mk in marks:
            if mk.startswith('file:'):
                name = mk[5:].strip()
        if lang == 'mlir':
            n += 1
            fname = name or f'_block{line}.ir'
            with open(os.path.join(d, fname), 'w') as f:
                f.write(body)
            r = subprocess.run(['l0-opt', fname], cwd=d, env=env, capture_output=True, text=True)
            want = 1 if 'invalid' in marks else 0
            if r.returncode != want:
                fails += 1
                print(f'{doc}:{line}: mlir block: exit {r.returncode} (want {want})\n{r.stderr}')
        elif lang == 'console':
            if 'nocheck' in marks:
                continue
            n += 1
            cmds, expect = [], []
            for l in body.rstrip('\n').split('\n'):
                if l.startswith('$ '):
                    cmds.append(l[2:])
                else:
                    expect.append(l)
            script = '\n'.join('{ ' + c + ' ; } 2>&1' for c in cmds)
            r = subprocess.run(['bash', '-c', script], cwd=d, env=env, capture_output=True, text=True)
            got = r.stdout.rstrip('\n').split('\n') if r.stdout.strip() else []
            exp = expect if any(x.strip() for x in expect) else []
            # ignore trailing blank lines
            while exp and not exp[-1].strip(): exp.pop()
            if got != exp:
                fails += 1
                print(f'{doc}:{line}: console block differs\n--- expected\n' + '\n'.join(exp) + '\n--- got\n' + '\n'.join(got) + '\n')
    shutil.rmtree(d)
    return fails, n

total = 0
for doc in sys.argv[1:]:
    f, n = run(doc)
    print(f'{doc}: {n} blocks, {f} failures')
    total += f
sys.exit(1 if total else 0)
