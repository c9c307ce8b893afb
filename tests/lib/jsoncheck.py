#!/usr/bin/python3
"""validate --json and diff --json say what the text says, taken apart.
Prints one line per case (ok NAME / FAIL NAME: why); exits 1 on a failure.

  validate NFBOX FILE...
      for each file: `validate --json --strict --offline` is one JSON
      document whose diagnostics, in order, are the text's: each text
      header line is FILE:LINE:COL: SEVERITY: MESSAGE and then the fix
      after its joiner ("; ", ": ", " (...)"); the counts and the exit
      status agree; a "did you mean" is always a fix.
  diff NFBOX OLD NEW
      `diff --json OLD NEW`: the changes' "text", line by line, is the
      text output; kind, hook, name, key, old and new are in each line;
      the exit status is the text's.
"""
import json
import re
import subprocess
import sys

FAILED = 0


def result(name, why):
    global FAILED
    if why:
        FAILED += 1
        print("FAIL %s: %s" % (name, why))
    else:
        print("ok %s" % name)


def run(*args):
    p = subprocess.run(args, capture_output=True, text=True, env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"})
    return p.returncode, p.stdout, p.stderr


def header(d):
    place = ""
    if d["file"] and d["line"]:
        place = "%s:%d:%d: " % (d["file"], d["line"], d["column"])
    elif d["file"]:
        place = "%s: " % d["file"]
    return "%s%s: %s" % (place, d["severity"], d["message"])


def check_fix(d, rest):
    """rest: what the text line has after the message."""
    if d["fix"] is None:
        return None if not rest.strip() else "the text goes on (%r) but the JSON has no fix" % rest
    m = re.match(r"^\s*(?:[;:,]\s*)?(\(?)(.*?)(\)?)$", rest)
    fix = m.group(2) if m and m.group(1) and m.group(3) else re.sub(r"^\s*[;:,]?\s*", "", rest)
    return None if fix == d["fix"] else "the fix is %r, the text says %r" % (d["fix"], rest)


def validate_one(nfbox, path):
    rc_t, out_t, err_t = run(nfbox, "validate", "--strict", "--offline", path)
    rc_j, out_j, err_j = run(nfbox, "validate", "--json", "--strict", "--offline", path)
    if rc_t != rc_j:
        return "exit %d with --json, %d without" % (rc_j, rc_t)
    try:
        doc = json.loads(out_j)
    except ValueError as e:
        return "not JSON: %s: %s" % (e, out_j[:200])
    if err_j:
        return "--json wrote to stderr: %s" % err_j[:200]
    f = doc["files"][0]
    if doc["valid"] != (rc_j == 0) or f["valid"] != (rc_j == 0) or f["file"] != path:
        return "valid/file say %s/%s, exit %d" % (doc["valid"], f["file"], rc_j)
    heads = [line for line in err_t.split("\n") if re.search(r"(^|: )(error|warning|note): ", line)]
    if len(heads) != len(f["diagnostics"]):
        return "%d diagnostics in JSON, %d in the text" % (len(f["diagnostics"]), len(heads))
    if not f["dropped"] and f["errors"] != sum(d["severity"] == "error" for d in f["diagnostics"]):
        return "errors %d, but %d error diagnostics" % (f["errors"], sum(d["severity"] == "error" for d in f["diagnostics"]))
    for d, line in zip(f["diagnostics"], heads):
        h = header(d)
        if not line.startswith(h):
            return "JSON %r is not the text's %r" % (h, line)
        why = check_fix(d, line[len(h):])
        if why:
            return why
        if "did you mean" in d["message"]:
            return "a 'did you mean' in the message, not in the fix: %r" % d["message"]
    return None


def validate(nfbox, *paths):
    fixes = 0
    for p in paths:
        result("validate-json-%s" % p.rsplit("/", 1)[-1], validate_one(nfbox, p))
        rc, out, _ = run(nfbox, "validate", "--json", "--strict", "--offline", p)
        try:
            fixes += sum(d["fix"] is not None for d in json.loads(out)["files"][0]["diagnostics"])
        except (ValueError, KeyError, IndexError):
            pass
    # the corpus has fixes to take apart: the check above is not vacuous
    result("validate-json-has-fixes", None if fixes >= 20 else "only %d fixes in all" % fixes)


def diff(nfbox, old, new):
    name = "diff-json-" + new.rsplit("/", 1)[-1]
    rc_t, out_t, _ = run(nfbox, "diff", old, new)
    rc_j, out_j, err_j = run(nfbox, "diff", "--json", old, new)
    why = None
    try:
        doc = json.loads(out_j)
    except ValueError as e:
        result(name, "not JSON: %s: %s" % (e, out_j[:200]))
        return
    texts = [c["text"] for c in doc["changes"]]
    if rc_t != rc_j:
        why = "exit %d with --json, %d without" % (rc_j, rc_t)
    elif texts != out_t.split("\n")[:-1]:
        why = "the changes' texts are not the text output: %r" % texts[:3]
    elif not doc["valid"] or doc["warnings"] != []:
        why = "valid %s, warnings %s" % (doc["valid"], doc["warnings"])
    for c in doc["changes"]:
        t = c["text"]
        if why:
            break
        if not t.startswith(c["kind"]) or c["change"] not in ("added", "removed", "moved", "changed"):
            why = "kind %s, change %s: %r" % (c["kind"], c["change"], t)
        for k in ("hook", "name", "key", "old", "new", "detail"):
            if c[k] is not None and c[k] not in t and not (k == "key" and c[k] == "elements"):
                why = "%s %r is not in %r" % (k, c[k], t)
        if c["kind"] == "rule" and not (c["hook"] and c["name"]):
            why = "a rule change without its hook and name: %r" % t
    result(name, why)


def main():
    {"validate": validate, "diff": diff}[sys.argv[1]](*sys.argv[2:])
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
