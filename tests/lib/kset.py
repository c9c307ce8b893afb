#!/usr/bin/python3
"""A dynamic set's entries as the kernel holds them, read with the kernel's
own tools, not through nfbox: one line "PREFIX LEFT" each, LEFT the seconds
until the kernel stops matching it (a float) or "never".

  kset.py bpf PIN_DIR SET   the pinned tries (bpftool): nfb_dyn4, nfb_dyn6,
                            the set's id from nfb_dyn_names
  kset.py nft SET           table inet nfbox's sets d_SET_4, d_SET_6 (nft -j;
                            run it in the appliance's namespace)
  kset.py bpf-del PIN_DIR SET PREFIX    the entry taken out of the tries
  kset.py bpf-add PIN_DIR SET PREFIX    an entry put into them, for good
(the last two make the kernel differ from the daemon, as a test of its check)
"""
import ipaddress
import json
import subprocess
import sys
import time


def bpftool(*args):
    out = subprocess.run(["bpftool", "-j", *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def raw(v):
    return bytes(int(x, 16) for x in v)


def set_ids(pins, name):
    return [int.from_bytes(raw(e["key"]), "little") for e in bpftool("map", "dump", "pinned", pins + "/maps/nfb_dyn_names")
            if raw(e["value"]).split(b"\0")[0].decode() == name]


def bpf_key(pins, name, prefix):
    n = ipaddress.ip_network(prefix)
    key = (16 + n.prefixlen).to_bytes(4, "little") + set_ids(pins, name)[0].to_bytes(2, "big") + n.network_address.packed
    key += bytes(-len(key) % 4)  # the struct's padding
    return "nfb_dyn%d" % n.version, ["%d" % b for b in key]


def bpf_change(pins, name, prefix, add):
    m, key = bpf_key(pins, name, prefix)
    cmd = ["bpftool", "map", "update" if add else "delete", "pinned", pins + "/maps/" + m, "key", *key]
    subprocess.run(cmd + (["value", *["0"] * 8] if add else []), check=True)


def bpf(pins, name):
    ids = set_ids(pins, name)
    boot = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
    for fam, alen in (("4", 4), ("6", 16)):
        for e in bpftool("map", "dump", "pinned", pins + "/maps/nfb_dyn" + fam):
            k = raw(e["key"])
            if int.from_bytes(k[4:6], "big") not in ids:
                continue
            plen = int.from_bytes(k[0:4], "little") - 16
            addr = ipaddress.ip_address(k[6:6 + alen])
            exp = int.from_bytes(raw(e["value"])[0:8], "little")
            if exp and exp <= boot:
                continue  # expired: the classifier matches it no more
            print("%s/%d %s" % (addr, plen, "never" if not exp else "%.1f" % ((exp - boot) / 1e9)))


def nft(name):
    for fam in ("4", "6"):
        r = subprocess.run(["nft", "-j", "list", "set", "inet", "nfbox", "d_%s_%s" % (name, fam)],
                           capture_output=True, text=True)
        if r.returncode:
            continue
        for o in json.loads(r.stdout)["nftables"]:
            for e in o.get("set", {}).get("elem", []):
                left = "never"
                if isinstance(e, dict) and "elem" in e:
                    left = "%.1f" % e["elem"]["expires"] if "expires" in e["elem"] else "never"
                    e = e["elem"]["val"]
                if isinstance(e, str):
                    a = ipaddress.ip_address(e)
                    print("%s/%d %s" % (a, a.max_prefixlen, left))
                elif "prefix" in e:
                    print("%s/%d %s" % (e["prefix"]["addr"], e["prefix"]["len"], left))


if __name__ == "__main__":
    if sys.argv[1] == "bpf":
        bpf(sys.argv[2], sys.argv[3])
    elif sys.argv[1] in ("bpf-add", "bpf-del"):
        bpf_change(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[1] == "bpf-add")
    else:
        nft(sys.argv[2])
