#!/usr/bin/python3
"""The three-way differential test of nfbox's verdicts
(tests/netns/test_backend_diff.sh): for a generated policy and generated
probes, the reference interpreter (tests/diff/refjudge.c, the policy's
rules walked one by one), the BPF backend and the nftables backend must
agree, probe by probe, on what counted each packet (the rule, the default,
established; a limit gone past) and on whether it came out of the
appliance.

  gen SEED DIR        DIR/policy.yaml (the line "  BACKEND" is replaced by
                      the test), DIR/dynamic.txt ("SET PREFIX" lines, added
                      with nfbox set add), DIR/probes.json and DIR/judge.in
                      (refjudge's input)
  policy SEED DIR     DIR/policy.yaml alone, as gen writes it (no probes:
                      to pick seeds by what their policies hold)
  probe DIR BACKEND SOCK P
                      (root, host namespace) send every probe through the
                      namespaces P-c, P-a, P-s (test_backend_diff.sh's
                      topology), and after each read the daemon's counters
                      (control socket SOCK) and what arrived: DIR/BACKEND.obs
  compare DIR [BACKEND...] [--no-controls]
                      the reference (DIR/ref.out) against each backend's
                      observations; prints every disagreement with the
                      probe; exit 1 on one, or when a positive control
                      fails (a probe moved no counter, nothing was accepted
                      or nothing dropped; not with --no-controls)
  trace DIR NFBOX [NETNS]
                      what `nfbox trace --policy` says of each probe it can
                      describe (one whole packet, a state of its own, not
                      tracked:): DIR/trace.json, which compare then holds
                      to each backend's observation as it holds the
                      reference's; run in network namespace NETNS (root)
  only DIR ID OUT     a copy of DIR with probe ID alone into OUT (reduction)
  drop-rule POLICY N OUT
                      POLICY without its Nth rule (reduction); exit 3 when
                      it has no Nth rule

What is generated covers the language (the JSON Schema): interface groups
and wildcards, negated, up to 63 wildcards in a group; sets (many, inline,
negated, dynamic); address ranges; services with long port lists and
ranges; TCP, UDP, UDP-Lite, SCTP, ICMP and ICMPv6 types (lists, names),
other protocols; state; every hook, hook lists; accept, drop and reject
(every reject-with); log; rate limits per rule and per source; a
connection limit per source (rule cl, first on forward: SYN then RST from
one source again and again must not count, then the limit's last
connection and one over); schedules
(when:, in several zones: windows in force now, and windows of a day three
days off, out of force for the whole run); a country set (its entries
from a database the test writes, beside networks of another country);
NAT
(masquerade of IPv4, IPv6 or both, no-nat by destination, snat,
forward-port, to one address of in: or any, a port or a range of ports
onto a range, redirect, one-to-one of a client's address, nptv6 of lan0's
IPv6 prefix: replies come to the translated address); options defrag (both),
established (both). The probes fall on the policy's edges: the first and
last address of each prefix and the one past each end, the bounds of
each port range and the port past each, every ICMP type a rule names,
IPv6 extension-header chains, fragments (with defrag on judged whole,
with it off one by one), replies of accepted flows (established), IPv6
packets from IPv4-mapped addresses (malformed).
"""
import ctypes
import ipaddress
import json
import os
import random
import re
import select
import socket
import struct
import subprocess
import sys
import time

TAG = b"NFBD"

# The topology (test_backend_diff.sh). Clients behind lan0 (c0) and lan1
# (c1); next hops behind wan0 (s0) and wan1 (s1), reached by routes.
LAN = [("lan0", "c0", "198.51.100.1", "198.51.100.0/24", "2001:db8:1::1", "2001:db8:1::/64"),
       ("lan1", "c1", "192.0.2.1", "192.0.2.0/24", "2001:db8:3::1", "2001:db8:3::/64")]
WAN = [("wan0", "s0", "203.0.113.1", "203.0.113.64/26", "2001:db8:2::1", "2001:db8:5::/64"),
       ("wan1", "s1", "203.0.113.17", "203.0.113.128/26", "2001:db8:4::1", "2001:db8:6::/64")]
LOCAL4 = ["198.51.100.1", "192.0.2.1", "203.0.113.1", "203.0.113.17"]
LOCAL6 = ["2001:db8:1::1", "2001:db8:3::1", "2001:db8:2::1", "2001:db8:4::1"]

V4_POOL = ["198.51.100.0/24", "198.51.100.0/25", "198.51.100.128/26", "198.51.100.7", "192.0.2.0/24",
           "192.0.2.0/27", "192.0.2.77", "203.0.113.64/26", "203.0.113.128/26", "203.0.113.96/27",
           "203.0.113.100", "203.0.113.0/24", "0.0.0.0/0", "198.51.100.10-198.51.100.20",
           "203.0.113.70-203.0.113.130"]
V6_POOL = ["2001:db8:1::/64", "2001:db8:1::/120", "2001:db8:1::7", "2001:db8:3::/64", "2001:db8:5::/64",
           "2001:db8:6::/64", "2001:db8:6::42", "2001:db8::/32", "::/0", "2001:db8:5::10-2001:db8:5::2f"]
PROTO_NUM = {"tcp": 6, "udp": 17, "sctp": 132, "udplite": 136, "icmp": 1, "icmpv6": 58, "gre": 47}
PORT_PROTOS = ["tcp", "udp", "sctp", "udplite"]
STATES = ["new", "established", "related", "invalid", "untracked"]
ICMP4 = {"echo-reply": 0, "destination-unreachable": 3, "echo-request": 8, "time-exceeded": 11,
         "timestamp-request": 13}
ICMP6 = {"destination-unreachable": 1, "echo-request": 128, "echo-reply": 129, "nd-neighbor-solicit": 135,
         "nd-router-solicit": 133}
REJECT_WITH = ["tcp-reset", "port-unreachable", "admin-prohibited", "host-unreachable", "net-unreachable"]


# ---------------------------------------------------------------------------
# The policy

class Policy:
    """What was generated, kept to make probes on its edges and to apply
    its NAT as the kernel does."""

    def __init__(self):
        self.groups = {}     # name -> [ifnames]
        self.sets = {}       # name -> [entries]
        self.dynamic = {}    # name -> [entries] added at run time
        self.fed = {}        # name -> [networks]: a country set (SE) of a database the test writes
        self.prefixes = []   # every prefix or range named anywhere
        self.ports = []      # (proto, lo, hi) named anywhere
        self.icmp = {4: set(), 6: set()}
        self.nat = []        # dicts: kind, in, from, dest, proto, port, port_hi, to, to_port
        # link -> source translation on the way out: "masquerade4",
        # "masquerade6", "masquerade46" (the families it translates) or an address
        self.nat_src = {}
        self.no_nat = []     # destinations that leave untranslated (no-nat)
        self.binat = []      # [inside, outside]: one-to-one of an address, or nptv6 of a prefix, out of wan
        self.defrag = True
        self.conns = 0       # the connection limit of rule cl (0: none)
        self.hooks = {}
        self.lines = []


def q(s):
    return '"%s"' % s


def port_entry(r, proto):
    lo = r.choice([1, 22, 53, 80, 443, 1000, 8000, 33000, 65000, 65535, r.randint(1, 65535)])
    if r.random() < 0.4:
        hi = min(65535, lo + r.choice([1, 2, 10, 100, 1000]))
        return proto, lo, hi, "%s/%d-%d" % (proto, lo, hi)
    return proto, lo, lo, "%s/%d" % (proto, lo)


def gen_policy(r, pol):
    defrag = r.random() < 0.8
    pol.defrag = defrag
    # Interface groups: real names, wildcards over them, and a group of up
    # to 63 wildcards that match no interface of the topology (negated,
    # every interface passes; one seed in three, the group also holds
    # "lan1*", which excludes lan1).
    many = ["w%02d*" % i for i in range(r.choice([2, 12, 40, 63]))]
    if r.random() < 0.35:
        many[-1] = "lan1*"
    pol.groups = {"lan": ["lan0"], "dmz": ["lan1"], "wan": ["wan0", "wan1"], "up1": ["wan1"],
                  "inside": ["lan0", "lan*"], "many": many}
    lines = ["version: 1", "interfaces:"]
    lines += ["  %s: [%s]" % (g, ", ".join(q(i) for i in v)) for g, v in pol.groups.items()]
    nsets = r.randint(3, 9)
    lines.append("sets:")
    for i in range(nsets):
        entries = r.sample(V4_POOL, r.randint(1, 4)) + r.sample(V6_POOL, r.randint(0, 3))
        pol.sets["s%d" % i] = entries
        pol.prefixes += entries
        lines.append("  s%d: [%s]" % (i, ", ".join(q(a) for a in entries)))
    for name in ("d1", "d2"):
        fed = name == "d2" and r.random() < 0.5  # a country set: its entries from a database
        lines.append("  %s: %s" % (name, "{ country: [SE], database: @GEO@ }" if fed else "{ dynamic: true }"))
        picked = []
        for a in r.sample(V4_POOL + V6_POOL, r.randint(0, 5)):
            if "-" in a:
                continue
            net = ipaddress.ip_network(a, strict=False)
            if all(net.version != p.version or not net.overlaps(p) for p in picked):
                picked.append(net)
        if fed:  # a database holds no network at its tree's root (::/0)
            picked = [p for p in picked if p.version == 4 or p.prefixlen > 0]
        pol.dynamic[name] = [str(p.network_address) if p.prefixlen == p.max_prefixlen else str(p) for p in picked]
        pol.prefixes += pol.dynamic[name]
        if fed:
            pol.fed[name] = [str(p) for p in picked]
    # Services: short, and one long list of ports and ranges.
    lines.append("services:")
    long = [port_entry(r, r.choice(PORT_PROTOS)) for _ in range(r.randint(20, 60))]
    short = [port_entry(r, r.choice(PORT_PROTOS)) for _ in range(r.randint(1, 3))]
    for name, ents in (("long", long), ("short", short)):
        pol.ports += [e[:3] for e in ents]
        lines.append("  %s: [%s]" % (name, ", ".join(e[3] for e in ents)))
    lines.append("hooks:")
    for h in ("forward", "input", "output"):
        if h == "forward" or r.random() < 0.7:
            pol.hooks[h] = r.choice(["accept", "drop"])
            lines.append("  %s: { default: %s }" % (h, pol.hooks[h]))
    established = "accept" if defrag and r.random() < 0.5 else "rules"
    lines += ["options:", "  established: %s" % established, "  defrag: %s" % ("true" if defrag else "false"),
              "  reject-rate: 100000/second", "  log-rate: 100000/second", "  BACKEND"]
    pol.established_accept = established == "accept"
    if defrag and r.random() < 0.6:
        lines += gen_nat(r, pol)
    lines.append("rules:")
    if defrag and r.random() < 0.7:
        # A connection limit first on forward, and a drop of what it finds
        # over the limit: such a connection is never confirmed, so the
        # kernel's ct count forgets it too (nftables counts one a later
        # rule accepts; policy/README.md, "Connection limits").
        pol.conns = r.randint(1, 3)
        pol.ports.append(("tcp", 7000, 7003))
        match = "hook: forward, in: lan, proto: tcp, service: [tcp/7000-7003], state: new"
        lines.append("  - { name: cl, %s, limit: { connections: %d, per: source }, action: accept }" % (match, pol.conns))
        lines.append("  - { name: clx, %s, action: drop }" % match)
    hooks = list(pol.hooks)
    for i in range(r.randint(6, 22)):
        lines += gen_rule(r, pol, i, hooks, defrag)
    # The last rule takes the other verdict than the forward default for
    # one protocol, so that every seed both accepts and drops traffic (the
    # comparison's positive control asks for both).
    other = "accept" if pol.hooks["forward"] == "drop" else "drop"
    lines.append("  - { name: last, hook: forward, proto: %s, action: %s }" % (r.choice(["tcp", "udp"]), other))
    return "\n".join(lines) + "\n"


def gen_nat(r, pol):
    lines = ["nat:"]
    # The choices of the NAT forms added later (masquerade's family, no-nat,
    # destination:, ranges of ports) come from a generator of their own, so
    # that the rest of a seed's policy and probes stay what they were (the
    # positive control's seeds among them).
    rn = random.Random(hash(r.getstate()))
    x = r.random()
    if x < 0.5:
        # IPv4 unless it says otherwise
        fam, written = rn.choice([("4", ""), ("4", "ipv4"), ("46", "[ipv4, ipv6]"), ("6", "ipv6")])
        if fam != "6" and rn.random() < 0.4:
            pol.no_nat = ["203.0.113.96/27"]  # a part of wan0's servers keeps the clients' addresses
            pol.prefixes += pol.no_nat
            lines.append("  - no-nat: { out: wan, destination: 203.0.113.96/27 }")
        lines.append("  - masquerade: { out: wan%s }" % (", family: " + written if written else ""))
        pol.nat_src = {"wan0": "masquerade" + fam, "wan1": "masquerade" + fam}
    elif x < 0.8:  # one source translation per interface: not both
        lines.append("  - snat: { out: up1, to: 203.0.113.20 }")
        pol.nat_src = {"wan1": "203.0.113.20"}
    # applied before any masquerade or snat: a client's own outside address,
    # lan0's IPv6 prefix behind another
    if rn.random() < 0.3:
        pol.binat.append(["198.51.100.77", "203.0.113.77"])
        lines.append("  - one-to-one: { interface: wan, inside: 198.51.100.77, outside: 203.0.113.77 }")
    if rn.random() < 0.3:
        pol.binat.append(["2001:db8:1::/64", "2001:db8:9::/64"])
        lines.append("  - nptv6: { interface: wan, inside: \"2001:db8:1::/64\", outside: \"2001:db8:9::/64\" }")
    for port in r.sample([8080, 8443, 2222], r.randint(1, 2)):
        proto = r.choice(["tcp", "udp"])
        to_port = r.choice([80, 22, port])
        # a range of ports onto a range of the same length, port by port
        port_hi = port + 2 if rn.random() < 0.3 else port
        if port_hi != port:
            to_port = rn.choice([9000, port])
        n = {"kind": "forward-port", "in": r.choice(["lan", "dmz", "[lan, dmz]"]), "proto": proto, "port": port,
             "port_hi": port_hi, "to": "203.0.113.100", "to_port": to_port, "from": None, "dest": None,
             "hairpin": r.random() < 0.7}
        if r.random() < 0.3:
            n["from"] = "198.51.100.0/25"
        own = [l[2] for l in LAN if in_group(pol, n["in"], l[0])]
        if own and rn.random() < 0.3:  # one of the addresses of in: only
            n["dest"] = rn.choice(own)
        pol.nat.append(n)
        pol.ports.append((proto, port, port_hi))
        pol.ports.append((proto, to_port, to_port + port_hi - port))
        target = "%d-%d" % (to_port, to_port + port_hi - port) if port_hi != port else "%d" % to_port
        lines.append("  - forward-port: { in: %s, service: %s/%s, to: \"203.0.113.100:%s\"%s%s%s }" %
                     (n["in"], proto, "%d-%d" % (port, port_hi) if port_hi != port else port, target,
                      ", from: %s" % n["from"] if n["from"] else "",
                      ", destination: %s" % n["dest"] if n["dest"] else "",
                      "" if n["hairpin"] else ", hairpin: false"))
    if r.random() < 0.4:
        n = {"kind": "redirect", "in": "lan", "proto": "tcp", "port": 3129, "port_hi": 3129, "to_port": 3128,
             "from": None, "dest": None}
        pol.nat.append(n)
        pol.ports += [("tcp", 3129, 3129), ("tcp", 3128, 3128)]
        lines.append("  - redirect: { in: lan, service: tcp/3129, to: 3128 }")
    return lines


def addr_list(r, pol, neg):
    if r.random() < 0.3:
        return q("%s%s" % (neg, r.choice(["d1", "d2"])))
    if r.random() < 0.5:
        return q("%s%s" % (neg, r.choice(list(pol.sets))))
    ents = r.sample(V4_POOL + V6_POOL, r.randint(1, 4))
    pol.prefixes += ents
    return "[%s]" % ", ".join(q(neg + a) for a in ents)


def gen_rule(r, pol, i, hooks, defrag):
    rule = {"name": "r%d" % i}
    hook = r.choice(hooks + (["[%s]" % ", ".join(hooks)] if len(hooks) > 1 else []))
    rule["hook"] = hook
    on = hook.strip("[]").split(", ")
    if "output" not in on and r.random() < 0.45:
        rule["in"] = r.choice(["lan", "dmz", "lan0", "[lan, dmz]", q("!lan"), '["!lan0", "!dmz"]', q("lan*"),
                               q("!many"), "many", q("!inside"), "inside", '[dmz, "wan*"]', q("!lan*")])
    if "input" not in on and r.random() < 0.35:
        rule["out"] = r.choice(["wan", "up1", "wan0", q("!wan"), q("wan*"), '["wan1*", lan0]', q("!many"),
                                q("!up1")])
    for key in ("from", "to"):
        if r.random() < 0.45:
            rule[key] = addr_list(r, pol, "!" if r.random() < 0.25 else "")
    proto = r.choice(["tcp", "udp", "icmp", "icmpv6", "sctp", "udplite", "gre"]) if r.random() < 0.4 else None
    if proto:
        rule["proto"] = proto
    if proto in ("icmp", "icmpv6") and r.random() < 0.7:
        names = ICMP4 if proto == "icmp" else ICMP6
        picked = r.sample(list(names), r.randint(1, 3))
        for n in picked:
            pol.icmp[4 if proto == "icmp" else 6].add(names[n])
        rule["icmp-type"] = "[%s]" % ", ".join(n if r.random() < 0.7 else str(names[n]) for n in picked)
    elif proto in (None, "tcp", "udp", "sctp", "udplite"):
        if r.random() < 0.55:
            if proto is None and r.random() < 0.5:
                rule["service"] = r.choice(["long", "short"])
            else:
                ents = [port_entry(r, proto or r.choice(PORT_PROTOS)) for _ in range(r.randint(1, 8))]
                pol.ports += [e[:3] for e in ents]
                rule["service"] = "[%s]" % ", ".join(e[3] for e in ents)
        if r.random() < 0.15:
            e = port_entry(r, proto or r.choice(PORT_PROTOS))
            pol.ports.append(e[:3])
            rule["source-service"] = "[%s]" % e[3]
    if defrag and r.random() < 0.25:
        rule["state"] = "[%s]" % ", ".join(r.sample(STATES, r.randint(1, 3)))
    while len(set(rule) & {"in", "out", "from", "to", "proto", "service", "source-service", "state"}) < 2:
        key = r.choice(["from", "to", "proto"])
        if key == "proto" and not set(rule) & {"proto", "service", "source-service", "icmp-type"}:
            rule["proto"] = r.choice(["udp", "tcp", "gre"])
        elif key in ("from", "to") and key not in rule:
            rule[key] = addr_list(r, pol, "")
    rule["action"] = r.choice(["accept", "accept", "drop", "drop", "reject"])
    if rule["action"] == "reject" and r.random() < 0.6:
        rule["reject-with"] = r.choice(REJECT_WITH)
    if r.random() < 0.2:
        rule["log"] = "true"
    if r.random() < 0.15:
        # 1/hour refills nothing during the test: exactly burst packets
        # match, the rest go on to later rules, alike in all three.
        rule["limit"] = "{ rate: 1/hour, burst: %d, per: %s }" % (r.randint(1, 3), r.choice(["rule", "source"]))
    if r.random() < 0.15:
        rule["when"] = when_window(r)
    out = []
    if r.random() < 0.2:
        # A run of rules that differ only in their ports (the nftables
        # backend makes them one rule with a counter map).
        shape = {k: v for k, v in rule.items() if k in ("hook", "in", "out", "from", "to")}
        act = r.choice(["accept", "drop"])
        for k in range(r.randint(2, 8)):
            e = port_entry(r, r.choice(["tcp", "udp"]))
            pol.ports.append(e[:3])
            run = dict(shape, name="r%dp%d" % (i, k), service="[%s]" % e[3], action=act)
            out.append("  - { %s }" % ", ".join("%s: %s" % kv for kv in run.items()))
    out.append("  - { %s }" % ", ".join("%s: %s" % kv for kv in rule.items()))
    return out


DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Sydney"]


def when_window(r):
    """A schedule whose state holds for the whole run, in any zone: in force
    (today, yesterday and tomorrow in UTC: a day each side covers every
    zone's offset), or out of force (only the day three days off)."""
    import time
    today = (int(time.time()) // 86400 + 4) % 7  # 1970-01-01 was a Thursday
    zone = r.choice(ZONES)
    if r.random() < 0.5:
        days = "%s-%s" % (DAYS[(today + 6) % 7], DAYS[(today + 1) % 7])
    else:
        days = DAYS[(today + 3) % 7]
    return "{ days: [%s], tz: %s }" % (days, zone)


# ---------------------------------------------------------------------------
# Packets

def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff


def pseudo(src, dst, proto, length, v6):
    if v6:
        return socket.inet_pton(socket.AF_INET6, src) + socket.inet_pton(socket.AF_INET6, dst) + \
            struct.pack("!IxxxB", length, proto)
    return socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!xBH", proto, length)


def l4_bytes(kind, src, dst, v6, sport, dport, payload, flags="S", icmp_type=8, seq=12345, ack=0):
    """The layer-4 header and payload, checksummed for src and dst."""
    from scapy.layers.inet import ICMP, IP, TCP, UDP
    from scapy.layers.inet6 import ICMPv6EchoRequest, ICMPv6Unknown, IPv6
    from scapy.layers.sctp import SCTP
    from scapy.packet import Raw
    if kind == "udplite":
        body = struct.pack("!HHHH", sport, dport, 8, 0) + payload
        c = csum(pseudo(src, dst, 136, len(body), v6) + body[:8]) or 0xffff
        return body[:6] + struct.pack("!H", c) + body[8:]
    if kind == "gre":  # a GREv0 header
        return b"\x00\x00\x08\x00" + payload
    ip = IPv6(src=src, dst=dst) if v6 else IP(src=src, dst=dst)
    if kind == "tcp":
        l4 = TCP(sport=sport, dport=dport, flags=flags, seq=seq, ack=ack) / Raw(payload)
    elif kind == "udp":
        l4 = UDP(sport=sport, dport=dport) / Raw(payload)
    elif kind == "sctp" and flags == "init":
        # INIT must be the packet's only chunk (conntrack finds one with
        # more invalid): the tag goes in a parameter of it, of a type
        # marked "skip" (RFC 9260 3.2.1).
        from scapy.layers.sctp import crc32c
        param = struct.pack("!HH", 0x8abc, 4 + len(payload)) + payload + b"\0" * (-len(payload) % 4)
        init = struct.pack("!BBHIIHHI", 1, 0, 20 + len(param), 7, 1500, 1, 1, 1) + param
        head = struct.pack("!HHII", sport, dport, 0, 0)
        return head[:8] + struct.pack(">I", crc32c(head + init)) + init
    elif kind == "sctp":  # no chunk: conntrack finds it invalid
        l4 = SCTP(sport=sport, dport=dport, tag=9) / Raw(payload)
    elif not v6:
        l4 = ICMP(type=icmp_type, id=sport) / Raw(payload)
    elif icmp_type == 128:
        l4 = ICMPv6EchoRequest(id=sport) / Raw(payload)
    else:
        l4 = ICMPv6Unknown(type=icmp_type, code=0) / Raw(struct.pack("!I", sport) + payload)
    b = bytes(ip / l4)
    return b[40:] if v6 else b[20:]


def ip_packet(src, dst, v6, proto, l4, chain=0, ident=1):
    """An IP packet around l4; IPv6 with a chain of that many extension
    headers (a hop-by-hop one, then destination options), each of 8 bytes
    with a PadN option."""
    if not v6:
        hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), ident & 0xffff, 0, 64, proto, 0,
                          socket.inet_aton(src), socket.inet_aton(dst))
        return hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:] + l4
    types = ([0] + [60] * (chain - 1)) if chain else []
    exts = b""
    for k in range(chain):
        nxt = types[k + 1] if k + 1 < chain else proto
        exts += struct.pack("!BB", nxt, 0) + b"\x01\x04\x00\x00\x00\x00"
    hdr = struct.pack("!IHBB16s16s", 6 << 28, len(exts) + len(l4), types[0] if chain else proto, 64,
                      socket.inet_pton(socket.AF_INET6, src), socket.inet_pton(socket.AF_INET6, dst))
    return hdr + exts + l4


def fragments(pkt, v6, size, ident):
    """The IP packet pkt cut into fragments of at most size payload bytes
    (a multiple of 8)."""
    out = []
    if not v6:
        hl = (pkt[0] & 15) * 4
        hdr, data = bytearray(pkt[:hl]), pkt[hl:]
        for off in range(0, len(data), size):
            part = data[off:off + size]
            h = bytearray(hdr)
            more = off + size < len(data)
            struct.pack_into("!H", h, 2, hl + len(part))
            struct.pack_into("!H", h, 6, (0x2000 if more else 0) | (off // 8))
            struct.pack_into("!H", h, 10, 0)
            struct.pack_into("!H", h, 10, csum(bytes(h)))
            out.append(bytes(h) + part)
        return out
    # IPv6: the unfragmentable part is the fixed header (no chain here).
    nh, data = pkt[6], pkt[40:]
    for off in range(0, len(data), size):
        part = data[off:off + size]
        more = off + size < len(data)
        fh = struct.pack("!BBHI", nh, 0, off | (1 if more else 0), ident)
        h = bytearray(pkt[:40])
        h[6] = 44
        struct.pack_into("!H", h, 4, len(fh) + len(part))
        out.append(bytes(h) + fh + part)
    return out


# ---------------------------------------------------------------------------
# Probes: what is sent, what each hook sees, and the conntrack state the
# kernel gives it (every probe is the first packet of its connection, but
# the replies).

def ct_first(kind, v6, flags, icmp_type, local=False):
    """The conntrack state of the first packet of a connection (local: sent
    by the appliance itself)."""
    if kind == "tcp":
        return {"S": "new", "A": "new", "PA": "new"}.get(flags, "invalid")
    if kind == "sctp":
        return "new" if flags == "init" else "invalid"
    if kind == "udplite":
        # The kernel's conntrack checks a UDP-Lite checksum with UDP's
        # protocol number in the pseudo-header (udplite_error passes
        # IPPROTO_UDP), so a datagram checksummed by RFC 3828 (136) that
        # arrives from outside is invalid with nf_conntrack_checksum on
        # (the default); from the appliance itself it is not checked.
        return "new" if local else "invalid"
    if kind == "icmp":
        if not v6:
            return "new" if icmp_type in (8, 13) else "invalid"
        if icmp_type in (130, 131, 132, 133, 134, 135, 136, 143):
            return "untracked"
        return "new" if icmp_type == 128 else "invalid"
    return "new"


def route_out(dst, v6):
    """The appliance's interface towards dst, and the server-side link."""
    a = ipaddress.ip_address(dst)
    for w in WAN:
        if a in ipaddress.ip_network(w[5] if v6 else w[3]):
            return w
    return None


def in_group(pol, spec, ifname):
    names = [n.strip() for n in spec.strip("[]").split(",")]
    return any(i == ifname or (i.endswith("*") and ifname.startswith(i[:-1]))
               for n in names for i in pol.groups.get(n, [n]))


def nat_dest(pol, iif, src, dst, v6, kind, dport):
    """forward-port and redirect as the kernel's nat prerouting applies them
    (to the first packet of a connection only): the new destination and
    port, or None. A forward-port translates what arrives on its `in`, and
    with hairpin (the default) what arrives elsewhere for an address of one
    of its `in` interfaces (never for the appliance's other addresses), in
    the order of the nat: section. A destination: limits both to that
    address; a range of ports goes onto the target's range port by port."""
    for n in pol.nat:
        if n["kind"] not in ("forward-port", "redirect") or kind != n["proto"] or not n["port"] <= dport <= n["port_hi"]:
            continue
        if n["from"] and (v6 or ipaddress.ip_address(src) not in ipaddress.ip_network(n["from"])):
            continue  # the generated from: lists IPv4 only
        if n["dest"] and dst != n["dest"]:
            continue
        arriving = in_group(pol, n["in"], iif)
        own = [n["dest"]] if n["dest"] else [l[2] for l in LAN + WAN if in_group(pol, n["in"], l[0])]
        if n["kind"] == "forward-port" and not v6 and (arriving or n["hairpin"] and dst in own):
            return n["to"], n["to_port"] + dport - n["port"]  # the target is IPv4: only IPv4 is translated
        if n["kind"] == "redirect" and arriving:  # to the incoming interface's address
            return [l[4] if v6 else l[2] for l in LAN if l[0] == iif][0], n["to_port"]
    return None


def binat_of(binat, src, link):
    """The address a one-to-one or nptv6 out of wan gives src (the host bits
    kept), or None."""
    if link not in ("wan0", "wan1"):
        return None
    a = ipaddress.ip_address(src)
    for inside, outside in binat:
        i, o = ipaddress.ip_network(inside), ipaddress.ip_network(outside)
        if a.version == i.version and a in i:
            return str(o.network_address + (int(a) - int(i.network_address)))
    return None


def edge_addrs(pol, v6):
    """Addresses on the edges of the policy's prefixes and ranges."""
    out = []
    for p in pol.prefixes:
        if ":" in p and not v6 or ":" not in p and v6:
            continue
        if "-" in p:
            lo, hi = (ipaddress.ip_address(x) for x in p.split("-"))
        else:
            n = ipaddress.ip_network(p, strict=False)
            lo, hi = n.network_address, n.broadcast_address
        for a in (lo - 1 if int(lo) else lo, lo, hi, hi + 1 if int(hi) < (2 ** (128 if v6 else 32) - 1) else hi):
            out.append(str(a))
    return out


def edge_ports(pol, proto):
    out = [1, 80, 65535]
    for p, lo, hi in pol.ports:
        if p == proto:
            out += [max(1, lo - 1), lo, hi, min(65535, hi + 1)]
    return out


class Prober:
    def __init__(self, r, pol):
        self.r, self.pol, self.probes, self.sport = r, pol, [], 10000
        self.neighbors = []  # (link, address) the appliance sends replies to

    def next_sport(self):
        self.sport += 1
        return self.sport

    def pick_src(self, lan, v6):
        """A source on the client's link, or one on the policy's edges that
        routes back to it (rp_filter is off in the test)."""
        net = ipaddress.ip_network(lan[5] if v6 else lan[3])
        special = {net.network_address, net.broadcast_address, ipaddress.ip_address(lan[4] if v6 else lan[2])}
        cands = [a for a in edge_addrs(self.pol, v6)
                 if ipaddress.ip_address(a) in net and ipaddress.ip_address(a) not in special]
        if cands and self.r.random() < 0.6:
            return self.r.choice(cands)
        return str(net.network_address + self.r.choice([2, 7, 55, 77, 200]))

    def pick_dst(self, v6):
        cands = [a for a in edge_addrs(self.pol, v6) if route_out(a, v6)]
        if cands and self.r.random() < 0.6:
            return self.r.choice(cands)
        w = self.r.choice(WAN)
        net = ipaddress.ip_network(w[5] if v6 else w[3])
        return str(net.network_address + self.r.choice([1, 2, 5, 36, 62]))

    def l4(self, v6, kind=None):
        r = self.r
        kind = kind or r.choice(["tcp", "tcp", "udp", "udp", "icmp", "sctp", "udplite", "gre"])
        if kind == "gre" and self.pol.nat_src:
            # GRE has no ports: two clients' flows to one server would need
            # the same translated tuple, and the kernel drops the second.
            kind = "udp"
        sport = self.next_sport()
        if kind in PORT_PROTOS:
            dport = r.choice(edge_ports(self.pol, kind))
        else:
            dport = 0
        flags = r.choice(["S", "S", "S", "A", "SA", "R", "F", "PA"]) if kind == "tcp" else \
            ("init" if r.random() < 0.8 else "data") if kind == "sctp" else ""
        icmp_type = 0
        if kind == "icmp":
            named = list(self.pol.icmp[6 if v6 else 4])
            icmp_type = r.choice(named + ([128, 129, 1, 135] if v6 else [8, 0, 3, 13]))
        return kind, sport, dport, flags, icmp_type

    def add(self, summary, sends, judged, arrive_at):
        self.probes.append({"id": len(self.probes), "summary": summary, "send": sends, "judge": judged,
                            "watch": arrive_at})

    def packet(self, kind, src, dst, v6, sport, dport, flags, icmp_type, chain=0, payload_len=16, seq=12345, ack=0):
        """The probe's packet; its payload begins with the tag of the probe
        about to be added (what the watchers look for)."""
        payload = TAG + struct.pack("!I", len(self.probes)) + b"." * max(0, payload_len - 8)
        proto = PROTO_NUM["icmpv6" if kind == "icmp" and v6 else kind]
        l4 = l4_bytes(kind, src, dst, v6, sport, dport, payload, flags, icmp_type, seq, ack)
        return ip_packet(src, dst, v6, proto, l4, chain, ident=len(self.probes) + 1)

    def forward(self, judge_only=False):
        r, pol = self.r, self.pol
        lan = r.choice(LAN)
        v6 = r.random() < 0.45
        src, dst = self.pick_src(lan, v6), self.pick_dst(v6)
        kind, sport, dport, flags, icmp_type = self.l4(v6)
        while nat_dest(pol, lan[0], src, dst, v6, kind, dport):
            dport = r.randint(1, 65535)  # what nat translates is local()'s
        chain = r.choice([0, 0, 0, 1, 2, 5, 8]) if v6 else 0
        big = kind in ("udp", "icmp") and r.random() < 0.15 and chain == 0 and (kind == "udp" or v6 or icmp_type == 8)
        pkt = self.packet(kind, src, dst, v6, sport, dport, flags, icmp_type, chain, 3000 if big else 16)
        ct = ct_first(kind, v6, flags, icmp_type)
        w = route_out(dst, v6)
        sends = [{"ns": "c", "ifname": lan[1], "to": lan[0], "v6": v6, "hex": f.hex()}
                 for f in (fragments(pkt, v6, 1400 if r.random() < 0.5 else 1200, len(self.probes) + 77) if big else [pkt])]
        if big and pol.defrag:
            judged = [("forward", lan[0], w[0], ct, pkt)]
        elif big:
            judged = [("forward", lan[0], w[0], "invalid", bytes.fromhex(s["hex"])) for s in sends]
        else:
            judged = [("forward", lan[0], w[0], ct, pkt)]
        if not pol.defrag:
            judged = [(h, i, o, "invalid", b) for h, i, o, c, b in judged]  # no conntrack at all
        self.add("forward %s %s %s -> %s %s/%d%s%s" % (lan[0], "v6" if v6 else "v4", src, dst, kind, dport,
                                                    " chain %d" % chain if chain else "", " fragmented" if big else ""),
                 sends, [dict(hook=h, iif=i, oif=o, ct=c, hex=b.hex()) for h, i, o, c, b in judged], w[1])
        return kind, lan, w, src, dst, sport, dport, v6, flags, ct

    def reply(self, orig, accepted, nat_src):
        """The server's answer to an earlier probe: established if the
        reference accepted the first packet, else as a first packet. When
        the first packet left translated (nat_src: masquerade or snat on
        its way out), the answer goes to that address and the forward hook
        sees it translated back."""
        kind, lan, w, src, dst, sport, dport, v6, flags, ct = orig
        rflags = "SA" if kind == "tcp" else flags
        judged = self.packet(kind, dst, src, v6, dport, sport, rflags, 0)
        sent = self.packet(kind, dst, nat_src, v6, dport, sport, rflags, 0) if nat_src and accepted else judged
        state = "established" if accepted else ct_first(kind, v6, rflags, 0)
        if not self.pol.defrag:
            state = "invalid"
        self.neighbors.append((lan[0], src))
        self.add("reply %s -> %s %s %d -> %d (%s%s)" % (dst, src, kind, dport, sport, state,
                                                       ", to %s" % nat_src if sent is not judged else ""),
                 [{"ns": "s", "ifname": w[1], "to": w[0], "v6": v6, "hex": sent.hex()}],
                 [dict(hook="forward", iif=w[0], oif=lan[0], ct=state, hex=judged.hex())], lan[1])

    def local(self):
        """To one of the appliance's own addresses (the input hook), or
        translated by nat (forward-port: the forward hook; redirect: input)."""
        r, pol = self.r, self.pol
        lan = r.choice(LAN)
        v6 = r.random() < 0.4
        src = self.pick_src(lan, v6)
        nat = [n for n in pol.nat if n["kind"] in ("forward-port", "redirect")]
        kind, sport, dport, flags, icmp_type = self.l4(v6)
        if "input" not in pol.hooks:  # only what nat sends on to the forward hook
            nat = [n for n in nat if n["kind"] == "forward-port"]
        if v6:  # forward-port's target is IPv4
            nat = [n for n in nat if n["kind"] == "redirect"]
        if nat and (r.random() < 0.6 or "input" not in pol.hooks):
            n = r.choice(nat)
            kind, flags, dport = n["proto"], "S" if n["proto"] == "tcp" else "", n["port"]
            if n["port_hi"] != n["port"]:
                dport = r.randint(n["port"], n["port_hi"])
            if r.random() < 0.8:  # mostly from where it translates
                lan = r.choice([l for l in LAN if in_group(pol, n["in"], l[0])] or [lan])
                src = self.pick_src(lan, v6)
            dst = (lan[4] if v6 else lan[2]) if n["kind"] == "forward-port" else self.pick_dst(v6)
            if n["dest"] and r.random() < 0.7:
                dst = n["dest"]
        else:
            dst = r.choice(LOCAL6 if v6 else LOCAL4)
        pkt = self.packet(kind, src, dst, v6, sport, dport, flags, icmp_type)
        ct = ct_first(kind, v6, flags, icmp_type) if pol.defrag else "invalid"
        hook, oif, jpkt, watch = "input", "-", pkt, None
        t = nat_dest(pol, lan[0], src, dst, v6, kind, dport) if ct == "new" else None
        if t:
            ndst, nport = t
            jpkt = self.packet(kind, src, ndst, v6, sport, nport, flags, icmp_type)
            w = route_out(ndst, v6)
            if w:
                hook, oif, watch = "forward", w[0], w[1]
        elif route_out(dst, v6):  # a server address: forwarded
            w = route_out(dst, v6)
            hook, oif, watch = "forward", w[0], w[1]
        if hook not in pol.hooks:
            return  # no hook to see it: nothing would count it
        self.add("%s %s %s -> %s %s/%d%s" % (hook, lan[0], src, dst, kind, dport, " (nat)" if t else ""),
                 [{"ns": "c", "ifname": lan[1], "to": lan[0], "v6": v6, "hex": pkt.hex()}],
                 [dict(hook=hook, iif=lan[0], oif=oif, ct=ct, hex=jpkt.hex())], watch)

    def mapped(self):
        """An IPv6 packet from an IPv4-mapped address (::ffff:A, A an IPv4
        address on the policy's edges or the client's link), forwarded or
        to the appliance: malformed on every hook, whatever the rules, the
        state and an IPv4 rule on A."""
        r, pol = self.r, self.pol
        lan = r.choice(LAN)
        src = "::ffff:" + r.choice(edge_addrs(pol, False) + [self.pick_src(lan, False)])
        kind, sport, dport, flags, icmp_type = self.l4(True)
        hook, dst, oif, watch = "forward", self.pick_dst(True), "-", None
        if "input" in pol.hooks and r.random() < 0.3:
            hook, dst = "input", r.choice(LOCAL6)
        else:
            oif, watch = route_out(dst, True)[0], route_out(dst, True)[1]
        while nat_dest(pol, lan[0], src, dst, True, kind, dport):
            dport = r.randint(1, 65535)  # redirect would make it another hook's
        pkt = self.packet(kind, src, dst, True, sport, dport, flags, icmp_type)
        ct = ct_first(kind, True, flags, icmp_type) if pol.defrag else "invalid"
        self.add("%s %s v6 mapped %s -> %s %s/%d" % (hook, lan[0], src, dst, kind, dport),
                 [{"ns": "c", "ifname": lan[1], "to": lan[0], "v6": True, "hex": pkt.hex()}],
                 [dict(hook=hook, iif=lan[0], oif=oif, ct=ct, hex=pkt.hex())], watch)

    def conn_sequence(self):
        """Rule cl's connection limit: from one source, SYN then RST again and
        again (more times than the limit), some answered by the server
        before the reset (conntrack then keeps the connection, closed, where
        it forgets an unanswered one at once); then as many SYNs as the limit
        holds and one more. A reset connection no longer counts, so only the
        last SYN may be over (more if the source has connections of its own
        from the probes before). The answer and the reset are "tracked": as
        their state says if the SYN got through, else invalid (the reference
        knows which)."""
        r, lan, n = self.r, LAN[0], self.pol.conns
        v6 = r.random() < 0.4
        src, dst = self.pick_src(lan, v6), self.pick_dst(v6)
        w = route_out(dst, v6)
        # An answer needs the connection's own addresses: none behind a source NAT.
        answered = 0.5 if not self.pol.nat_src.get(w[0]) and not binat_of(self.pol.binat, src, w[0]) else 0
        steps = [("S", "SA", "R") if r.random() < answered else ("S", "R") for _ in range(n + 2)] + [("S",)] * (n + 1)
        for flags in steps:
            sport, dport = self.next_sport(), 7000 + r.randint(0, 3)
            for f in flags:
                # The numbers of a handshake (the payloads take 16): in conntrack's window.
                if f == "SA":
                    self.neighbors.append((lan[0], src))
                    a, b, link, watch = dst, src, ("s", w[1], w[0]), lan[1]
                    pkt = self.packet("tcp", dst, src, v6, dport, sport, f, 0, seq=50000, ack=12362)
                    ct = "tracked:established"
                else:
                    a, b, link, watch = src, dst, ("c", lan[1], lan[0]), w[1]
                    pkt = self.packet("tcp", src, dst, v6, sport, dport, f, 0, seq=12345 if f == "S" else 12362,
                                      ack=50017 if f == "R" and "SA" in flags else 0)
                    ct = "new" if f == "S" else "tracked:established" if "SA" in flags else "tracked:new"
                self.add("forward %s %s %s -> %s tcp %d -> %d %s" % (link[2], "v6" if v6 else "v4", a, b, sport if a == src
                                                                     else dport, dport if a == src else sport, f),
                         [{"ns": link[0], "ifname": link[1], "to": link[2], "v6": v6, "hex": pkt.hex()}],
                         [dict(hook="forward", iif=link[2], oif=lan[0] if f == "SA" else w[0], ct=ct, hex=pkt.hex())],
                         watch)

    def output(self):
        """From the appliance itself (a raw socket: the output hook)."""
        r = self.r
        v6 = r.random() < 0.4
        dst = self.pick_dst(v6)
        w = route_out(dst, v6)
        src = w[4] if v6 else w[2]
        kind, sport, dport, flags, icmp_type = self.l4(v6, r.choice(["tcp", "udp", "udp", "icmp", "udplite"]))
        if kind == "tcp":
            flags = "S"
        if kind == "icmp":
            icmp_type = 128 if v6 else 8
        pkt = self.packet(kind, src, dst, v6, sport, dport, flags, icmp_type)
        ct = ct_first(kind, v6, flags, icmp_type, local=True) if self.pol.defrag else "invalid"
        self.add("output %s -> %s %s/%d" % (src, dst, kind, dport),
                 [{"ns": "a", "raw": True, "v6": v6, "dst": dst, "hex": pkt.hex()}],
                 [dict(hook="output", iif="-", oif=w[0], ct=ct, hex=pkt.hex())], w[1])


def gen_probes(r, pol, n):
    pr = Prober(r, pol)
    flows = []
    for _ in range(n):
        x = r.random()
        if x < 0.04:
            pr.mapped()
        elif x < 0.6:
            flows.append((len(pr.probes), pr.forward()))
        elif x < 0.8 and ("input" in pol.hooks or any(n["kind"] == "forward-port" for n in pol.nat)):
            pr.local()
        elif x < 0.9 and "output" in pol.hooks:
            pr.output()
        else:
            flows.append((len(pr.probes), pr.forward()))
    if pol.conns:
        pr.conn_sequence()
    return pr, flows


def write_policy(seed, out):
    """The seed's policy into out/policy.yaml: its generator and what it
    generated."""
    r = random.Random(int(seed))
    pol = Policy()
    text = gen_policy(r, pol)
    geo = os.path.join(os.path.abspath(out), "geo.mmdb")
    with open(os.path.join(out, "policy.yaml"), "w") as f:
        f.write(text.replace("@GEO@", geo))
    return r, pol, geo


def cmd_policy(seed, out):
    write_policy(seed, out)


def cmd_gen(seed, out):
    r, pol, geo = write_policy(seed, out)
    with open(os.path.join(out, "fed.txt"), "w") as f:
        for name, nets in pol.fed.items():
            # the daemon fills these sets from the database; the reference
            # reads the same entries from dynamic.txt
            f.write(name + "\n")
            decoy = [n for n in ("192.0.2.128/25", "2001:db8:ffff::/48")
                     if all(not ipaddress.ip_network(n).overlaps(ipaddress.ip_network(p))
                            for p in nets if ipaddress.ip_network(p).version == ipaddress.ip_network(n).version)]
            subprocess.run(["/usr/bin/python3", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                             "..", "lib", "mmdbwrite.py"), geo]
                           + ["%s=SE" % n for n in nets] + ["%s=NO" % n for n in decoy], check=True)
    with open(os.path.join(out, "dynamic.txt"), "w") as f:
        for name, ents in pol.dynamic.items():
            f.write("".join("%s %s\n" % (name, e) for e in ents))
    pr, flows = gen_probes(r, pol, int(os.environ.get("NFBOX_DIFF_PROBES", "120")))
    # Replies need the reference's verdict on their first packet: they are
    # made by `replies` once refjudge has run (test_backend_diff.sh).
    state = {"seed": int(seed), "nat_src": pol.nat_src, "no_nat": pol.no_nat, "binat": pol.binat,
             "neighbors": pr.neighbors,
             "flows": [(i, list(f)) for i, f in flows if f[0] in ("tcp", "udp") and f[9] == "new"]}
    with open(os.path.join(out, "flows.json"), "w") as f:
        json.dump(state, f)
    write_probes(out, pr.probes)


def write_probes(out, probes):
    with open(os.path.join(out, "probes.json"), "w") as f:
        json.dump(probes, f)
    with open(os.path.join(out, "judge.in"), "w") as f:
        for p in probes:
            for j in p["judge"]:
                f.write("%d %s %s %s %s %s\n" % (p["id"], j["hook"], j["iif"], j["oif"], j["ct"], j["hex"]))


def read_ref(d):
    """refjudge's output: per probe, the counts it moves and whether a
    packet is accepted."""
    ref = {}
    for line in open(os.path.join(d, "ref.out")):
        f = line.split()
        e = ref.setdefault(int(f[0]), {"counts": {}, "accepted": [], "over": {}})
        if f[2] == "over":
            e["over"][(f[1], f[3])] = e["over"].get((f[1], f[3]), 0) + 1
        else:
            key = (f[1], f[2])
            e["counts"][key] = e["counts"].get(key, 0) + 1
            e["accepted"].append(f[3] == "accept")
    return ref


def cmd_replies(d):
    """Add the replies of accepted (and refused) flows, with the reference's
    verdict on their first packet (DIR/ref.out of the probes so far)."""
    state = json.load(open(os.path.join(d, "flows.json")))
    r = random.Random(state["seed"] + 1)
    ref = read_ref(d)
    pol = Policy()
    pol.defrag = "defrag: true" in open(os.path.join(d, "policy.yaml")).read()
    pr = Prober(r, pol)
    pr.probes = json.load(open(os.path.join(d, "probes.json")))
    pr.neighbors = [tuple(n) for n in state.get("neighbors", [])]
    for i, f in state["flows"]:
        if r.random() < 0.5 and i in ref:
            kind, lan, w, v6 = f[0], tuple(f[1]), tuple(f[2]), f[7]
            nat = state["nat_src"].get(w[0])
            dst = f[4]
            if nat and nat.startswith("masquerade"):
                nat = (w[4] if v6 else w[2]) if ("6" if v6 else "4") in nat[len("masquerade"):] else None
            elif nat and v6:
                nat = None  # the generated snat is IPv4's
            mapped = binat_of(state.get("binat", []), f[3], w[0])
            if mapped:
                nat = mapped  # one-to-one and nptv6 come before masquerade and snat
            if not v6 and any(ipaddress.ip_address(dst) in ipaddress.ip_network(p)
                              for p in state.get("no_nat", [])):
                nat = None  # no-nat, first of all: the reply comes to the client's own address
            pr.reply((kind, lan, w) + tuple(f[3:]), all(ref[i]["accepted"]), nat)
    write_probes(d, pr.probes)
    with open(os.path.join(d, "neighbors.txt"), "w") as f:
        f.write("".join("%s %s\n" % n for n in sorted(set(pr.neighbors))))


# ---------------------------------------------------------------------------
# Sending and observing (root)

libc = ctypes.CDLL("libc.so.6", use_errno=True)
CLONE_NEWNET = 0x40000000


def in_netns(name, fn):
    """fn() run in network namespace NAME (sockets made there stay there)."""
    own = os.open("/proc/self/ns/net", os.O_RDONLY)
    fd = os.open("/run/netns/" + name, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns " + name)
        return fn()
    finally:
        libc.setns(own, CLONE_NEWNET)
        os.close(fd)
        os.close(own)


def ctl(sock, request):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(sock)
    s.sendall(request.encode() + b"\n")
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    s.close()
    head, _, body = data.decode().partition("\n")
    if head != "ok":
        raise RuntimeError("%s: %s" % (request, data.decode()))
    return body


def counts(sock):
    st = json.loads(ctl(sock, "stats json"))
    c = {}
    for row in st["rules"]:
        key = (row["hook"], "(default)" if row.get("default") else row["rule"])
        c[key] = row["packets"]
        if row.get("over_limit"):
            c[(row["hook"], "over " + row["rule"])] = row["over_limit"]
    c[("all", "(established)")] = st["established"]["packets"]
    for k in ("unreassembled", "malformed"):
        if k in st["drops"]:
            c[("all", "(%s)" % k)] = st["drops"][k]
    return c


def delta(a, b):
    return {k: v - a.get(k, 0) for k, v in b.items() if v != a.get(k, 0)}


def quoted(frame, at):
    """Whether the tag at `at` in an Ethernet frame is quoted by an ICMP
    error (an answer to a rejected probe) rather than the probe itself: the
    probes that are ICMP errors carry their tag right after the 8 bytes of
    their ICMP header, an error about a probe only after the quoted IP
    header."""
    eth = struct.unpack("!H", frame[12:14])[0]
    if eth == 0x0800 and len(frame) >= 34:
        off, proto = 14 + (frame[14] & 15) * 4, frame[23]
        error = proto == 1 and len(frame) > off and frame[off] in (3, 4, 5, 11, 12)
    elif eth == 0x86dd and len(frame) >= 54:
        off, proto = 54, frame[20]
        while proto in (0, 43, 60) and len(frame) >= off + 8:
            proto, off = frame[off], off + 8 + 8 * frame[off + 1]
        error = proto == 58 and len(frame) > off and frame[off] < 128
    else:
        return False
    return error and at != off + 8


def cmd_probe(d, backend, sock, prefix):
    probes = json.load(open(os.path.join(d, "probes.json")))
    sockets = {}

    def packet_socket(ns, ifname):
        key = (ns, ifname)
        if key not in sockets:
            def mk():
                s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
                s.bind((ifname, 0))
                return s
            sockets[key] = in_netns("%s-%s" % (prefix, ns), mk)
        return sockets[key]

    # The appliance's MACs: /sys/class/net shows the namespace of whoever
    # mounted /sys, so ask its links' sockets instead.
    macs = {n: packet_socket("a", n).getsockname()[4] for n in ("lan0", "lan1", "wan0", "wan1")}
    raw = {}
    for v6 in (False, True):
        raw[v6] = in_netns(prefix + "-a", lambda: socket.socket(socket.AF_INET6 if v6 else socket.AF_INET,
                                                                 socket.SOCK_RAW, socket.IPPROTO_RAW))
    # Watchers: what arrives on the client links and the server links.
    watch = {}
    for ns, names in (("c", ["c0", "c1"]), ("s", ["s0", "s1"])):
        for n in names:
            s = packet_socket(ns, n)
            s.setblocking(False)
            watch[n] = s

    def drain(timeout):
        seen = set()
        end = time.time() + timeout
        while True:
            r, _, _ = select.select(list(watch.values()), [], [], max(0, end - time.time()))
            if not r:
                break
            for s in r:
                try:
                    while True:
                        data, addr = s.recvfrom(70000)
                        if addr[2] == socket.PACKET_OUTGOING:
                            continue
                        at = data.find(TAG)
                        if at >= 0 and at + 8 <= len(data) and not quoted(data, at):
                            seen.add((addr[0], struct.unpack("!I", data[at + 4:at + 8])[0]))
                except BlockingIOError:
                    pass
        return seen

    drain(0.05)
    obs = []
    before = counts(sock)
    for p in probes:
        for s in p["send"]:
            data = bytes.fromhex(s["hex"])
            if s.get("raw"):
                try:
                    raw[s["v6"]].sendto(data, (s["dst"], 0))
                except PermissionError:
                    pass  # the output hook dropped it (and said so to the sender)
            else:
                sk = packet_socket(s["ns"], s["ifname"])
                eth = macs[s["to"]] + sk.getsockname()[4] + (b"\x86\xdd" if s["v6"] else b"\x08\x00")
                sk.send(eth + data)
        # Until the counters move and then stay still for 20 ms (2 s at
        # most: a probe no hook saw moves nothing, which compare reports).
        # Asked every 3 ms until they move, then once more 21 ms after each
        # change: counters only grow, so two equal reads 20 ms apart are
        # 20 ms of stillness (reads in between cost the daemon, not more).
        moved, arrived, still_since, wait = {}, set(), None, 0.003
        end = time.time() + 2.0
        while time.time() < end:
            arrived |= drain(wait)
            cur = counts(sock)
            dd = delta(before, cur)
            if dd != moved:
                moved, still_since, wait = dd, time.time(), 0.021
            elif moved and time.time() - still_since > 0.02:
                break
        arrived |= drain(0.01)
        before = cur
        obs.append({"id": p["id"], "counts": [[k[0], k[1], v] for k, v in moved.items()],
                    "arrived": sorted(n for n, i in arrived if i == p["id"])})
    with open(os.path.join(d, backend + ".obs"), "w") as f:
        json.dump(obs, f)
    return 0


# ---------------------------------------------------------------------------
# Comparing

def expected_counts(e):
    c = {}
    for (hook, what), n in e["counts"].items():
        key = (hook, what) if what != "(established)" else ("all", "(established)")
        if what in ("(unreassembled)", "(malformed)"):
            key = ("all", what)
        c[key] = c.get(key, 0) + n
    for (hook, rule), n in e["over"].items():
        c[(hook, "over " + rule)] = c.get((hook, "over " + rule), 0) + n
    return c


def expected_arrival(p, e):
    """Where the probe's tagged packet must come out, if anywhere: the
    watched link when the hook that forwards it (the last judged packet's,
    or with fragments judged one by one the first's) accepts."""
    if not p["watch"] or not e["accepted"]:
        return []
    ok = e["accepted"][0] if len(p["judge"]) > 1 else e["accepted"][-1]
    return [p["watch"]] if ok else []


def cmd_compare(d, *backends):
    controls = "--no-controls" not in backends  # reduction: one probe alone
    backends = tuple(b for b in backends if b != "--no-controls") or ("bpf", "nftables")
    probes = json.load(open(os.path.join(d, "probes.json")))
    ref = read_ref(d)
    obs = {b: {o["id"]: o for o in json.load(open(os.path.join(d, b + ".obs")))} for b in backends}
    bad, forwarded, dropped, silent, accepts, drops = 0, 0, 0, 0, 0, 0
    for p in probes:
        e = ref.get(p["id"], {"counts": {}, "accepted": [], "over": {}})
        want_c, want_a = expected_counts(e), expected_arrival(p, e)
        for b in backends:
            o = obs[b].get(p["id"])
            got_c = {(k[0], k[1]): k[2] for k in o["counts"]} if o else {}
            got_a = o["arrived"] if o else []
            if not got_c:
                silent += 1
            if got_c != want_c or got_a != want_a:
                bad += 1
                print("probe %d (%s): %s differs from the reference" % (p["id"], p["summary"], b))
                print("    reference: counts %s, out on %s" % (fmt(want_c), want_a or "nothing"))
                print("    %-9s  counts %s, out on %s" % (b + ":", fmt(got_c), got_a or "nothing"))
                for j in p["judge"]:
                    h = j["hex"] if len(j["hex"]) <= 200 else j["hex"][:200] + "... (%d bytes)" % (len(j["hex"]) // 2)
                    print("    packet (%s, in %s, out %s, %s): %s" % (j["hook"], j["iif"], j["oif"], j["ct"], h))
        if p["watch"]:
            if want_a:
                forwarded += 1
            else:
                dropped += 1
        accepts += any(e["accepted"])
        drops += not all(e["accepted"])
    print("%d probes, %d forwarded and %d not by the reference, %d disagreements" % (len(probes), forwarded, dropped, bad))
    # What if: nfbox trace's verdicts (DIR/trace.json) against the same observations.
    traced = {}
    if os.path.exists(os.path.join(d, "trace.json")):
        traced = {int(k): v for k, v in json.load(open(os.path.join(d, "trace.json"))).items()}
    held = 0
    for p in probes:
        t = traced.get(p["id"])
        for b in backends if t else ():
            r = compare_trace(p, t, b, obs[b].get(p["id"]))
            held += r is True
            bad += r is False
    if traced:
        print("nfbox trace: %d probes traced, %d observations held to it" % (len(traced), held))
    # Positive controls: the comparison means something only if traffic
    # was seen and judged both ways.
    if not controls:
        return 1 if bad else 0
    if silent:
        print("control: %d observations moved no counter at all (was anything sent?)" % silent)
        bad += 1
    if not accepts or not drops:
        print("control: the seed must both accept and drop real traffic (accepted %d, dropped %d)" % (accepts, drops))
        bad += 1
    if traced and not held:
        print("control: nfbox trace traced %d probes and no observation was held to it" % len(traced))
        bad += 1
    for b in backends:
        if not any(obs[b][i]["arrived"] for i in obs[b]) and forwarded:
            print("control: %s forwarded nothing at all" % b)
            bad += 1
    return 1 if bad else 0

# ---------------------------------------------------------------------------
# What if: nfbox trace on the same probes

L4_PORTS = (6, 17, 132, 136)


def l4_of(raw):
    """(family, src, dst, proto, sport, dport, icmp_type) of a whole IP
    packet, or None (a fragment, a cut header)."""
    if raw[0] >> 4 == 4:
        ihl = (raw[0] & 15) * 4
        if struct.unpack("!H", raw[6:8])[0] & 0x3fff:
            return None  # a fragment
        proto, off = raw[9], ihl
        src, dst = socket.inet_ntop(socket.AF_INET, raw[12:16]), socket.inet_ntop(socket.AF_INET, raw[16:20])
    else:
        proto, off = raw[6], 40
        src, dst = socket.inet_ntop(socket.AF_INET6, raw[8:24]), socket.inet_ntop(socket.AF_INET6, raw[24:40])
        while proto in (0, 43, 60, 44, 51):
            if off + 8 > len(raw):
                return None
            if proto == 44:
                if struct.unpack("!H", raw[off + 2:off + 4])[0] & 0xfff9:
                    return None  # a fragment (offset or more-fragments)
                proto, off = raw[off], off + 8
            elif proto == 51:
                proto, off = raw[off], off + (raw[off + 1] + 2) * 4
            else:
                proto, off = raw[off], off + (raw[off + 1] + 1) * 8
    if proto in L4_PORTS:
        if off + 4 > len(raw):
            return None
        sport, dport = struct.unpack("!HH", raw[off:off + 4])
        return src, dst, proto, sport, dport, None
    if proto in (1, 58):
        return (src, dst, proto, None, None, raw[off]) if off < len(raw) else None
    return src, dst, proto, None, None, None


def trace_args(p):
    """nfbox trace's options for probe p, or None when it cannot say it:
    several packets judged, a state the reference works out (tracked:),
    a packet that is not whole."""
    if len(p["judge"]) != 1 or len(p["send"]) != 1:
        return None
    j = p["judge"][0]
    if j["ct"].startswith("tracked:"):
        return None
    # What was sent, when prerouting translated it (the trace must do the
    # same); else what the hook judged (a reply is translated back by
    # conntrack, which a single packet cannot show).
    raw = bytes.fromhex(p["send"][0]["hex"] if " (nat)" in p["summary"] else j["hex"])
    k = l4_of(raw)
    if not k:
        return None
    src, dst, proto, sport, dport, icmp = k
    a = ["--from", src, "--to", dst, "--proto", str(proto), "--state", j["ct"]]
    if j["iif"] != "-":
        a += ["--in", j["iif"]]
    if j["oif"] != "-":
        a += ["--out", j["oif"]]
    if sport is not None:
        a += ["--sport", str(sport), "--port", str(dport)]
    if icmp is not None:
        a += ["--icmp-type", str(icmp)]
    return a


def cmd_trace(d, nfbox, netns=None):
    if netns:  # where the appliance's interfaces are (its children start there too)
        return in_netns(netns, lambda: cmd_trace(d, nfbox))
    probes = json.load(open(os.path.join(d, "probes.json")))
    out = {}
    # The first trace with LeakSanitizer's scan at its exit, the others
    # (150 a seed) without it: it was a quarter of their CPU, and what it
    # checks is the same in each (tests/lib/lib.sh, cli_run).
    quiet = dict(os.environ, ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0")
    for p in probes:
        a = trace_args(p)
        if a is None:
            continue
        run = subprocess.run([nfbox, "trace", "--json", "--policy", os.path.join(d, "check.yaml"),
                              "--sets", os.path.join(d, "dynamic.txt")] + a, capture_output=True, text=True,
                             env=quiet if out else None)
        if run.returncode != 0:
            sys.stderr.write("nfbox trace %s: exit %d: %s" % (" ".join(a), run.returncode, run.stderr))
            return 1
        t = json.loads(run.stdout)
        out[p["id"]] = {"args": a, "hook": t["hook"], "decided_by": t["decided_by"], "verdict": t["verdict"]}
    with open(os.path.join(d, "trace.json"), "w") as f:
        json.dump(out, f)
    return 0


def trace_counts(t):
    """The counter a traced packet moves, as compare's keys."""
    what = t["decided_by"]
    return {("all" if what in ("(established)", "(malformed)") else t["hook"], what): 1}


def compare_trace(p, t, b, o):
    """Whether backend b's observation o of probe p is what nfbox trace
    said (t); None when a limit went past (trace assumes room)."""
    got_c = {(k[0], k[1]): k[2] for k in o["counts"]} if o else {}
    if any(k[1].startswith("over ") for k in got_c) or t["decided_by"] is None:
        return None
    want_a = [p["watch"]] if p["watch"] and t["verdict"] == "accept" else []
    got_a = o["arrived"] if o else []
    if got_c == trace_counts(t) and got_a == want_a:
        return True
    print("probe %d (%s): %s differs from nfbox trace" % (p["id"], p["summary"], b))
    print("    nfbox trace %s: %s %s, %s" % (" ".join(t["args"]), t["hook"], t["decided_by"], t["verdict"]))
    print("    %-9s  counts %s, out on %s" % (b + ":", fmt(got_c), got_a or "nothing"))
    return False



def fmt(c):
    return "{%s}" % ", ".join("%s %s: %d" % (k[0], k[1], v) for k, v in sorted(c.items())) if c else "{}"


def cmd_only(d, pid, out):
    probes = [p for p in json.load(open(os.path.join(d, "probes.json"))) if p["id"] == int(pid)]
    os.makedirs(out, exist_ok=True)
    for f in ("policy.yaml", "dynamic.txt", "fed.txt"):
        with open(os.path.join(d, f)) as a, open(os.path.join(out, f), "w") as b:
            b.write(a.read())
    write_probes(out, probes)


def cmd_drop_rule(path, n, out):
    lines = open(path).read().split("\n")
    at = lines.index("rules:")
    rules = [i for i in range(at + 1, len(lines)) if lines[i].startswith("  - ")]
    if int(n) >= len(rules):
        return 3
    del lines[rules[int(n)]]
    with open(out, "w") as f:
        f.write("\n".join(lines))
    return 0


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    fn = {"gen": cmd_gen, "policy": cmd_policy, "replies": cmd_replies, "probe": cmd_probe, "compare": cmd_compare, "trace": cmd_trace, "only": cmd_only,
          "drop-rule": cmd_drop_rule}[cmd]
    sys.exit(fn(*args) or 0)


if __name__ == "__main__":
    main()
