#!/usr/bin/python3
"""net.py builds its crafted packets (frags, forge) with struct, not scapy,
whose start-up cost 0.3-0.5 s of CPU at each run: here they are held byte
for byte against what scapy builds from the layers net.py once used, for
both families, every frags mode and every forge kind.
Usage: netpktcheck.py   (from the source tree). Prints ok/FAIL lines.
"""
import importlib.util
import os
import sys

from scapy.compat import raw
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrFragment
from scapy.packet import Raw

spec = importlib.util.spec_from_file_location("net", os.path.join(os.path.dirname(__file__), "net.py"))
net = importlib.util.module_from_spec(spec)
spec.loader.exec_module(net)

failed = 0


def check(name, got, want):
    global failed
    if got == want:
        print("ok netpkt-%s" % name)
        return
    failed += 1
    if len(got) != len(want):
        print("FAIL netpkt-%s: %d packets, scapy's %d" % (name, len(got), len(want)))
        return
    i = next(i for i, (g, w) in enumerate(zip(got, want)) if g != w)
    at = next((k for k, (a, b) in enumerate(zip(got[i], want[i])) if a != b), min(len(got[i]), len(want[i])))
    print("FAIL netpkt-%s: packet %d differs from byte %d: %s, scapy's %s" %
          (name, i, at, got[i][at:at + 8].hex(), want[i][at:at + 8].hex()))


def scapy_frags(src, host, ports, mode, evil_port, ident):
    """frags' packets as scapy built them (the code net.py had)."""
    v6 = ":" in host
    data = net.payload(3000)
    step = 1232 if v6 else 1200

    def l4(dport):
        if v6:
            return raw(IPv6(src=src, dst=host) / UDP(sport=4242, dport=dport) / Raw(data))[40:]
        return raw(IP(src=src, dst=host) / UDP(sport=4242, dport=dport) / Raw(data))[20:]

    def piece(ident, off, chunk, more):
        if v6:
            return (IPv6(src=src, dst=host) /
                    IPv6ExtHdrFragment(id=ident, nh=17, offset=off // 8, m=int(more)) / Raw(chunk))
        return IP(src=src, dst=host, id=ident, proto=17, flags="MF" if more else 0, frag=off // 8) / Raw(chunk)

    def split(ident, b, size):
        return [piece(ident, o, b[o:o + size], o + size < len(b)) for o in range(0, len(b), size)]

    out = []
    for n, p in enumerate(ports):
        i = ident + n
        b = l4(p)
        fr = split(i, b, step)
        if mode == "reverse":
            fr = list(reversed(fr))
        elif mode == "duplicate":
            fr = [f for f in fr for _ in (0, 1)]
        elif mode == "tiny-first":
            fr = split(i, b, 8)
        elif mode in ("overlap", "overlap-first"):
            evil = split(i, l4(evil_port), step)[0]
            fr = [fr[0], fr[1], evil] + fr[2:] if mode == "overlap" else [evil] + fr
        elif mode == "overlap-partial":
            evil = piece(i, 0, l4(evil_port)[:step + 8], True)
            fr = [fr[0], evil] + fr[1:]
        out += fr
    return [raw(p) for p in out]


def scapy_forge(src, host, port, sport, kinds):
    """forge's packets as scapy built them (the code net.py had)."""
    ip = IPv6(dst=host) if ":" in host else IP(dst=host)
    ip.src = src
    return [raw(ip / (UDP(sport=sport + i, dport=port) / net.payload(16) if k == "udp" else
                      TCP(sport=sport + i, dport=port, flags=0 if k == "0" else k, seq=1000 + i,
                          ack=2000 if "A" in k else 0)))
            for i, k in enumerate(kinds)]


FAMILIES = {4: ("198.51.100.2", "203.0.113.10", 0x1231), 6: ("2001:db8:1::2", "2001:db8:2::10", 0x4d2a31)}
for fam, (src, dst, ident) in FAMILIES.items():
    for mode in ("in-order", "reverse", "duplicate", "overlap", "overlap-first", "overlap-partial"):
        check("frags%d-%s" % (fam, mode), net.frag_packets(src, dst, [9000, 9001], mode, 9, ident),
              scapy_frags(src, dst, [9000, 9001], mode, 9, ident))
    # one port: 376 fragments of 8 bytes are enough of scapy's time
    check("frags%d-tiny-first" % fam, net.frag_packets(src, dst, [9001], "tiny-first", 9, ident + 7),
          scapy_frags(src, dst, [9001], "tiny-first", 9, ident + 7))
    kinds = ["S", "R", "F", "A", "FA", "RA", "0", "udp", "PA", "SEC"]
    check("forge%d" % fam, net.forge_packets(src, dst, 80, 41000, kinds), scapy_forge(src, dst, 80, 41000, kinds))
# test_mapped's: an IPv4-mapped source, an IPv4-mapped destination
check("forge-mapped-source", net.forge_packets("::ffff:192.0.2.2", "2001:db8:2::10", 80, 42001, ["S", "udp"]),
      scapy_forge("::ffff:192.0.2.2", "2001:db8:2::10", 80, 42001, ["S", "udp"]))
check("forge-mapped-destination", net.forge_packets("2001:db8:1::2", "::ffff:203.0.113.10", 80, 42002, ["S"]),
      scapy_forge("2001:db8:1::2", "::ffff:203.0.113.10", 80, 42002, ["S"]))
sys.exit(1 if failed else 0)
