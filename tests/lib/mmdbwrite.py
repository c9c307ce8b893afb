#!/usr/bin/python3
"""Write a small MaxMind DB (MMDB, format 2.0) for the tests: no database
ships in Debian, so the country-set tests make their own.

  mmdbwrite.py OUT NETWORK=CC [NETWORK=CC ...] [--v4] [--registered NETWORK=CC]

Each NETWORK (IPv4 or IPv6 prefix) gets a record { "country": { "iso_code":
CC } } (with --registered, { "registered_country": ... } instead). The tree
is IPv6 (IPv4 under ::/96, with the aliases ::ffff:0:0/96, 2001::/32 and
2002::/16 pointing at that subtree, as MaxMind's writer makes them) unless
--v4.
Record size 24 bits. Networks must not nest.
"""
import ipaddress
import struct
import sys
import time

META_MARKER = b"\xab\xcd\xefMaxMind.com"


# ---- the data section's encoding ----

def ctrl(type_, size):
    out = b""
    if type_ <= 7:
        first = type_ << 5
        ext = b""
    else:
        first = 0
        ext = bytes([type_ - 7])
    if size < 29:
        return bytes([first | size]) + ext
    if size < 29 + 256:
        return bytes([first | 29]) + ext + bytes([size - 29])
    if size < 285 + 65536:
        return bytes([first | 30]) + ext + struct.pack(">H", size - 285)
    return bytes([first | 31]) + ext + struct.pack(">I", size - 65821)[1:]


def enc(v, kind=None):
    if isinstance(v, str):
        b = v.encode()
        return ctrl(2, len(b)) + b
    if isinstance(v, dict):
        out = ctrl(7, len(v))
        for k, x in v.items():
            out += enc(k) + (enc(*x) if isinstance(x, tuple) else enc(x))
        return out
    if isinstance(v, list):
        out = ctrl(11, len(v))
        for x in v:
            out += enc(x)
        return out
    if isinstance(v, int):
        t = {"uint16": 5, "uint32": 6, "uint64": 9}[kind or "uint32"]
        b = v.to_bytes(16, "big").lstrip(b"\0")
        return ctrl(t, len(b)) + b
    raise TypeError(v)


# ---- the search tree ----

class Node:
    __slots__ = ("kids", "num")

    def __init__(self):
        self.kids = [None, None]  # Node, ("data", offset), ("alias", Node) or None
        self.num = None


def insert(root, bits, depth, value):
    if depth == 0:
        raise SystemExit("mmdbwrite: a network of length 0 (the whole tree) cannot be a record")
    n = root
    for i in range(depth - 1):
        b = bits[i]
        if n.kids[b] is None:
            n.kids[b] = Node()
        if not isinstance(n.kids[b], Node):
            raise SystemExit("mmdbwrite: networks nest")
        n = n.kids[b]
    if n.kids[bits[depth - 1]] is not None:
        raise SystemExit("mmdbwrite: networks nest")
    n.kids[bits[depth - 1]] = value


def node_at(root, bits):
    """The node (or data record: 0.0.0.0/0 in an IPv6 tree is one) at bits."""
    n = root
    for b in bits:
        if not isinstance(n, Node):
            return n
        if n.kids[b] is None:
            n.kids[b] = Node()
        n = n.kids[b]
    return n


def bits_of(addr_int, width, depth):
    return [(addr_int >> (width - 1 - i)) & 1 for i in range(depth)]


def main(argv):
    v4only = "--v4" in argv
    args = [a for a in argv[1:] if a != "--v4"]
    out, nets, key = args[0], [], "country"
    i = 1
    while i < len(args):
        if args[i] == "--registered":
            nets.append((args[i + 1], "registered_country"))
            i += 2
        else:
            nets.append((args[i], "country"))
            i += 1
    data = b""
    offsets = {}
    root = Node()
    width = 32 if v4only else 128
    for spec, key in nets:
        net, cc = spec.rsplit("=", 1)
        net = ipaddress.ip_network(net, strict=True)
        rec = (key, cc)
        if rec not in offsets:
            offsets[rec] = len(data)
            data += enc({key: {"iso_code": cc}})
        if net.version == 4 and not v4only:
            addr, depth = int(net.network_address), 96 + net.prefixlen
        elif net.version == 6 and v4only:
            raise SystemExit("mmdbwrite: an IPv6 network in an IPv4 tree")
        else:
            addr, depth = int(net.network_address), net.prefixlen
        insert(root, bits_of(addr, width, depth), depth, ("data", offsets[rec]))
    if not v4only:
        v4 = node_at(root, [0] * 96)
        for prefix_bits in (bits_of(0xFFFF << 32, 128, 96), bits_of(0x2001 << 112, 128, 32),
                            bits_of(0x2002 << 112, 128, 16)):
            parent = node_at(root, prefix_bits[:-1])
            parent.kids[prefix_bits[-1]] = ("alias", v4)
    # number the nodes breadth first
    order, q = [], [root]
    while q:
        n = q.pop(0)
        if n.num is not None:
            continue
        n.num = len(order)
        order.append(n)
        for k in n.kids:
            if isinstance(k, Node):
                q.append(k)
    count = len(order)
    tree = b""
    for n in order:
        recs = []
        for k in n.kids:
            if k is None:
                recs.append(count)
            elif isinstance(k, Node):
                recs.append(k.num)
            elif k[0] == "alias":
                # IPv4's subtree, or its one record when 0.0.0.0/0 is one
                t = k[1]
                recs.append(t.num if isinstance(t, Node) else count + 16 + t[1])
            else:
                recs.append(count + 16 + k[1])
        tree += recs[0].to_bytes(3, "big") + recs[1].to_bytes(3, "big")
    meta = enc({
        "node_count": (count, "uint32"),
        "record_size": (24, "uint16"),
        "ip_version": (4 if v4only else 6, "uint16"),
        "database_type": "nfbox-test-Country",
        "languages": ["en"],
        "binary_format_major_version": (2, "uint16"),
        "binary_format_minor_version": (0, "uint16"),
        "build_epoch": (int(time.time()), "uint64"),
        "description": {"en": "nfbox test database"},
    })
    with open(out + ".tmp", "wb") as f:
        f.write(tree + b"\0" * 16 + data + META_MARKER + meta)
    import os
    os.replace(out + ".tmp", out)  # as geoipupdate does: a new file renamed over the old


if __name__ == "__main__":
    main(sys.argv)
