#!/usr/bin/python3
"""keysdoc.py DOC JSON...: every key of the JSON documents (at any depth)
is named in DOC as `key`; prints the ones that are not, exits 1 if any.
(docs/report.md is the interface other programs read: a key it does not
name is one they cannot know of.)"""
import json
import re
import sys


def keys(v, out, path):
    if isinstance(v, dict):
        for k, x in v.items():
            out.setdefault(k, path + k)
            keys(x, out, path + k + ".")
    elif isinstance(v, list):
        for x in v:
            keys(x, out, path + "[].")


doc = open(sys.argv[1], encoding="utf-8").read()
named = set(re.findall(r"`([a-z_0-9]+)`", doc))
found = {}
for f in sys.argv[2:]:
    keys(json.load(open(f, encoding="utf-8")), found, "")
missing = sorted(p for k, p in found.items() if k not in named)
if not found:
    print("no keys read from", " ".join(sys.argv[2:]))
    sys.exit(1)
for p in missing:
    print("not in %s: %s" % (sys.argv[1], p))
sys.exit(1 if missing else 0)
