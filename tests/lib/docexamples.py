#!/usr/bin/python3
"""The policy documentation tested like code: every YAML example of
policy/README.md and nfbox-policy(5) is validated by nfbox, and where the
text shows what `nfbox validate` or `nfbox plan` prints for it, that output
is compared exactly.

In the README, an example is a ```yaml block; the code block that follows
it (fenced or indented) is its expected output when it starts with
"policy.yaml:" (validate) or "# nfbox plan of policy.yaml" (plan). A block
whose first line is "# NAME.txt" is a file the examples may read (a set
file). Without shown output an example must pass `validate --strict`. In
the man page, every .nf/.fi block that starts with "version: 1" is an
example and must pass `validate` (its warnings are told in the text).

Usage: docexamples.py NFBOX README [MANPAGE]
Prints "ok NAME" / "FAIL NAME: why" lines (tests/run.sh protocol).
"""
import os
import re
import subprocess
import sys
import tempfile


def readme_blocks(text):
    """(kind, body) in order: kind "yaml", "code" (fenced) or "indented"."""
    out, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        m = re.match(r"^```(\w*)$", lines[i])
        if m:
            j = i + 1
            while j < len(lines) and lines[j] != "```":
                j += 1
            out.append(("yaml" if m.group(1) == "yaml" else "code", "\n".join(lines[i + 1:j]) + "\n", i + 1))
            i = j + 1
            continue
        if lines[i].startswith("    ") and (i == 0 or not lines[i - 1].strip()):
            j = i
            while j < len(lines) and (lines[j].startswith("    ") or
                                      (not lines[j].strip() and j + 1 < len(lines) and lines[j + 1].startswith("    "))):
                j += 1
            out.append(("indented", "\n".join(l[4:] for l in lines[i:j]) + "\n", i + 1))
            i = j
            continue
        i += 1
    return out


def roff_text(s):
    for a, b in (("\\-", "-"), ("\\(dq", '"'), ("\\(aq", "'"), ("\\e", "\\"), ("\\&", ""), ("\\(em", "-")):
        s = s.replace(a, b)
    return re.sub(r"\\f[BIRP]", "", s)


def man_examples(text):
    out, lines = [], text.split("\n")
    for i, l in enumerate(lines):
        if l.strip() != ".nf":
            continue
        j = i + 1
        while j < len(lines) and lines[j].strip() != ".fi":
            j += 1
        body = "\n".join(roff_text(x) for x in lines[i + 1:j] if not x.startswith(".")) + "\n"
        if body.startswith("version: 1"):
            out.append((body, i + 1))
    return out


def run(nfbox, d, *args):
    # --offline: what the docs show is the policy's, not this machine's (its
    # interfaces, whether it forwards)
    offline = ["--offline"] if args[0] == "validate" else []
    r = subprocess.run([nfbox, args[0]] + offline + list(args[1:]) + ["policy.yaml"], cwd=d, capture_output=True,
                       text=True, env=dict(os.environ, NO_COLOR="1"))
    return r.returncode, r.stderr + r.stdout


def main():
    nfbox, readme = os.path.abspath(sys.argv[1]), sys.argv[2]
    man = sys.argv[3] if len(sys.argv) > 3 else None
    failed = 0
    blocks = readme_blocks(open(readme).read())
    files = {}
    for kind, body, _ in blocks:
        m = re.match(r"^# (\S+\.txt)\n", body)
        if kind == "code" and m:
            files[m.group(1)] = body
    cases = []
    for n, (kind, body, line) in enumerate(blocks):
        if kind != "yaml":
            continue
        shown = None
        for kind2, body2, _ in blocks[n + 1:]:
            if kind2 == "yaml":
                break
            if body2.startswith("policy.yaml:") or body2.startswith("# nfbox plan of policy.yaml"):
                shown = body2
                break
        cases.append(("%s:%d" % (readme, line), body, shown, True))
    for body, line in man_examples(open(man).read()) if man else []:
        cases.append(("nfbox-policy.5:%d" % line, body, None, False))
    for name, body, shown, strict in cases:
        with tempfile.TemporaryDirectory() as d:
            open(os.path.join(d, "policy.yaml"), "w").write(body)
            for f, text in files.items():
                open(os.path.join(d, f), "w").write(text)
            if shown is None:
                rc, out = run(nfbox, d, "validate", *(["--strict"] if strict else []))
                ok, why = rc == 0, out.strip()[-600:]
            else:
                plan = shown.startswith("# nfbox plan")
                rc, out = run(nfbox, d, "plan") if plan else run(nfbox, d, "validate")
                ok = out == shown
                why = "it prints (exit %d):\n%s" % (rc, out)
        if ok:
            print("ok doc-example %s" % name)
        else:
            failed += 1
            print("FAIL doc-example %s: %s" % (name, why))
    print("# %d examples, %d failed" % (len(cases), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
