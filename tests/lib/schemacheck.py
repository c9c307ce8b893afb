#!/usr/bin/python3
"""The policy's JSON Schema (config/schema/policy.schema.json) kept in step
with the loader:
  - the keys the schema allows in each mapping are exactly the loader's key
    lists, read from the C sources (top_keys, rule_keys, the option, hook,
    set-file, NAT-kind, capture, capture-match, rotate and ha keys);
  - every policy nfbox accepts here (golden valid files, shipped policies)
    passes the schema, and the golden files refused for a key or a type
    fail it.
Usage: schemacheck.py   (from the source tree). Prints ok/FAIL lines.
"""
import glob
import json
import re
import sys

import jsonschema
import yaml

failed = 0


def check(name, ok, why=""):
    global failed
    if ok:
        print("ok schema-%s" % name)
    else:
        failed += 1
        print("FAIL schema-%s: %s" % (name, why))


def c_list(path, var, occurrence=0):
    """The strings of `static const char *const VAR[] = { ... NULL };`."""
    text = open(path).read()
    found = re.findall(r"\b%s\[\]\s*=\s*\{(.*?)NULL\s*\}" % re.escape(var), text, re.S)
    return set(re.findall(r'"([^"]*)"', found[occurrence])) if len(found) > occurrence else None


schema = json.load(open("config/schema/policy.schema.json"))
P = schema["properties"]


def obj(s):
    """The non-null alternative of a schema (the null|section unions)."""
    for alt in s.get("oneOf", [s]):
        if alt.get("type") != "null":
            return alt
    return s


pairs = [
    ("top", c_list("policy/load/load.c", "top_keys"), set(P)),
    ("rule", c_list("policy/load/rules.c", "rule_keys"), set(obj(P["rules"])["items"]["properties"])),
    ("options", c_list("policy/load/defs.c", "keys", 1), set(obj(P["options"])["properties"])),
    ("hook", c_list("policy/load/defs.c", "keys", 0), set(obj(P["hooks"])["properties"]["input"]["properties"])),
    ("set-file", c_list("policy/load/defs.c", "file_keys"),
     set([a for a in obj(P["sets"])["additionalProperties"]["oneOf"] if a.get("type") == "object"][0]["properties"])),
    ("capture", c_list("policy/load/capture.c", "keys", 1), set(obj(P["capture"])["items"]["properties"])),
    ("capture-match", c_list("policy/load/capture.c", "keys", 0),
     set(obj(P["capture"])["items"]["properties"]["match"]["properties"])),
    ("capture-rotate", c_list("policy/load/capture.c", "rkeys"),
     set(obj(P["capture"])["items"]["properties"]["rotate"]["properties"])),
    ("ha", c_list("policy/load/ha.c", "keys", 2), set(obj(P["ha"])["properties"])),
    ("ha-sync", c_list("policy/load/ha.c", "keys", 0), set(obj(P["ha"])["properties"]["sync"]["properties"])),
    ("ha-virtual", c_list("policy/load/ha.c", "keys", 1),
     set(obj(P["ha"])["properties"]["virtual"]["items"]["properties"])),
]
nat = obj(P["nat"])["items"]["properties"]
for kind, var in (("masquerade", "masq_keys"), ("snat", "snat_keys"), ("forward-port", "fwd_keys"),
                  ("redirect", "redirect_keys")):
    pairs.append(("nat-" + kind, c_list("policy/load/nat.c", var), set(nat[kind]["properties"])))
for name, loader, sch in pairs:
    check("keys-" + name, loader is not None and loader == sch,
          "loader %s, schema %s" % (sorted(loader or []), sorted(sch)))

validator = jsonschema.Draft7Validator(schema)


def load(path):
    return yaml.safe_load(open(path))


accepted = sorted(glob.glob("tests/unit/golden/valid/*.yaml")) + ["config/policy.yaml"] + \
    sorted(glob.glob("config/examples/*.yaml")) + ["config/host/policy.yaml"]
for path in accepted:
    errs = list(validator.iter_errors(load(path)))
    check("accepts-" + path, not errs, "; ".join("%s: %s" % (list(e.path), e.message) for e in errs[:3]))
for name in ("unknown-key", "wrong-type-rules", "wrong-type-scalar", "wrong-version", "missing-version"):
    path = "tests/unit/golden/invalid/%s.yaml" % name
    check("refuses-" + name, list(validator.iter_errors(load(path))) != [], "the schema accepts %s" % path)
sys.exit(1 if failed else 0)
