#!/usr/bin/python3
"""Generated policies and traffic for the backend differential test
(tests/netns/test_backend_diff.sh): the same policy and the same packets
through the BPF backend and the nftables backend must give the same verdict
for every packet and the same count for every rule.

  gen SEED DIR            write DIR/policy.yaml (BACKEND is replaced by the
                          test), DIR/dyn-d1.txt and dyn-d2.txt (the dynamic
                          sets' entries) and DIR/packets.json for SEED
  send PACKETS MAC0 MAC1  (client namespace) send every packet as an Ethernet
                          frame on c0 or c1 to the appliance's MAC there
  sniff OUT SECONDS       (server namespace) record the tags of the frames
                          arriving on s0 and s1 until SIGTERM or SECONDS
  compare DIR             compare DIR/bpf.* with DIR/nftables.*; print every
                          disagreement with the seed, the rule and the packet
"""
import json
import os
import random
import select
import signal
import socket
import struct
import sys
import time

TAG = b"NFBD"

# The topology (test_backend_diff.sh): clients behind lan0 (c0) and lan1
# (c1), next hops behind wan0 (s0) and wan1 (s1).
V4_SRC = ["198.51.100.%d", "192.0.2.%d"]
V6_SRC = ["2001:db8:1::%x", "2001:db8:3::%x"]
V4_DST = ["203.0.113.%d" % n for n in (64, 65, 70, 99, 100, 127, 128, 129, 150, 191)]
V6_DST = ["2001:db8:5::%x" % n for n in (1, 2, 0x99)] + ["2001:db8:6::%x" % n for n in (1, 0x42, 0xffff)]
LOCAL_DST = ["198.51.100.1", "192.0.2.1", "2001:db8:1::1", "2001:db8:3::1"]

V4_POOL = ["198.51.100.0/24", "198.51.100.0/25", "198.51.100.128/26", "198.51.100.7", "192.0.2.0/24",
           "192.0.2.0/27", "192.0.2.77", "203.0.113.64/26", "203.0.113.128/26", "203.0.113.96/27",
           "203.0.113.100", "203.0.113.0/24", "0.0.0.0/0"]
V6_POOL = ["2001:db8:1::/64", "2001:db8:1::/120", "2001:db8:1::7", "2001:db8:3::/64", "2001:db8:5::/64",
           "2001:db8:6::/64", "2001:db8:6::42", "2001:db8::/32", "::/0"]
PORTS = [22, 53, 80, 443, 8000, 8050, 8100, 8101, 9000, 33000, 65535]
PORT_ENTRIES = ["tcp/80", "tcp/443", "udp/53", "tcp/53", "tcp/8000-8100", "udp/8000-8100", "sctp/9000",
                "tcp/22", "udp/33000-65535", "tcp/1-1024"]
PROTOS = ["tcp", "udp", "icmp", "icmpv6", "sctp", "gre"]
STATES = ["new", "established", "related", "invalid", "untracked"]
GROUPS = {"lan": ["lan0"], "dmz": ["lan1"], "wan": ["wan0", "wan1"], "up1": ["wan1"]}


def gen_dynamic(r):
    """Entries for the dynamic sets d1 and d2 (filled with `nfbox set add`
    once the daemon runs): pool prefixes that do not overlap within a set."""
    import ipaddress
    out = {}
    for name in ("d1", "d2"):
        picked = []
        for a in r.sample(V4_POOL + V6_POOL, r.randint(0, 6)):
            net = ipaddress.ip_network(a, strict=False)
            if all(net.version != p.version or not net.overlaps(p) for p in picked):
                picked.append(net)
        out[name] = [str(p.network_address) if p.prefixlen == p.max_prefixlen else str(p) for p in picked]
    return out


def gen_policy(r):
    sets = {}
    for name in ("s1", "s2", "s3"):
        sets[name] = r.sample(V4_POOL, r.randint(1, 3)) + r.sample(V6_POOL, r.randint(0, 2))
    services = {"web": ["tcp/80", "tcp/443"], "dns": ["udp/53", "tcp/53"],
                "mix": r.sample(PORT_ENTRIES, r.randint(1, 3))}
    lines = ["version: 1", "interfaces:"]
    lines += ["  %s: [%s]" % (g, ", ".join(v)) for g, v in GROUPS.items()]
    lines.append("sets:")
    lines += ['  %s: [%s]' % (n, ", ".join('"%s"' % a for a in v)) for n, v in sets.items()]
    lines += ["  d1: { dynamic: true }", "  d2: { dynamic: true }"]
    lines.append("services:")
    lines += ["  %s: [%s]" % (n, ", ".join(v)) for n, v in services.items()]
    lines.append("hooks:")
    for h in ("forward", "input"):
        lines.append("  %s: { default: %s }" % (h, r.choice(["accept", "drop"])))
    lines += ["options:", "  established: %s" % r.choice(["accept", "rules"]), "  reject-rate: 10000/second",
              "  BACKEND", "rules:"]
    for i in range(r.randint(4, 14)):
        rule = {"name": "r%d" % i}
        hook = r.choice(["forward", "forward", "input", "[forward, input]"])
        rule["hook"] = hook
        if r.random() < 0.4:
            rule["in"] = r.choice(["lan", "dmz", "lan0", "[lan, dmz]", '"!lan"', '["!lan0", "!dmz"]', '"lan*"',
                                   '[dmz, "wan*"]', '"!lan*"'])
        if hook == "forward" and r.random() < 0.3:
            rule["out"] = r.choice(["wan", "up1", "wan0", '"!wan"', '"wan*"', '["wan1*", lan0]'])
        for key in ("from", "to"):
            if r.random() < 0.45:
                neg = "!" if r.random() < 0.25 else ""
                if r.random() < 0.4:  # a dynamic set stands alone
                    rule[key] = '"%s%s"' % (neg, r.choice(["d1", "d2"]))
                elif r.random() < 0.5:
                    rule[key] = '"%s%s"' % (neg, r.choice(list(sets)))
                else:
                    rule[key] = "[%s]" % ", ".join('"%s%s"' % (neg, a) for a in r.sample(V4_POOL + V6_POOL, r.randint(1, 3)))
        proto = r.choice(PROTOS) if r.random() < 0.35 else None
        if proto:
            rule["proto"] = proto
        if proto in ("icmp", "icmpv6") and r.random() < 0.5:
            pool = [8, 0, 3] if proto == "icmp" else [128, 129, 1]
            rule["icmp-type"] = str(r.choice(pool)) if r.random() < 0.5 else \
                "[%s]" % ", ".join(str(t) for t in r.sample(pool, 2))
        elif proto in (None, "tcp", "udp", "sctp"):
            if r.random() < 0.5:
                entries = [e for e in PORT_ENTRIES if proto is None or e.startswith(proto + "/")]
                if entries:
                    rule["service"] = r.choice(["web", "dns", "mix", "[%s]" % ", ".join(r.sample(entries, min(len(entries), r.randint(1, 3))))]) \
                        if proto is None else "[%s]" % ", ".join(r.sample(entries, min(len(entries), r.randint(1, 2))))
            if r.random() < 0.15:
                entries = [e for e in PORT_ENTRIES if proto is None or e.startswith(proto + "/")]
                if entries:
                    rule["source-service"] = "[%s]" % r.choice(entries)
        if r.random() < 0.2:
            rule["state"] = "[%s]" % ", ".join(r.sample(STATES, r.randint(1, 2)))
        # Rules that match everything would hide the rest: at least two keys.
        while len(set(rule) & {"in", "out", "from", "to", "proto", "service", "source-service", "state"}) < 2:
            key = r.choice(["from", "to", "in"] + (["service"] if proto is None and "service" not in rule else []))
            if key == "in":
                rule["in"] = r.choice(["lan", "dmz", "lan0", "[lan, dmz]"])
            elif key == "service":
                rule["service"] = r.choice(["web", "dns", "mix"])
            else:
                rule[key] = "[%s]" % ", ".join('"%s"' % a for a in r.sample(V4_POOL[:-1] + V6_POOL[:-1], r.randint(1, 3)))
        rule["action"] = r.choice(["accept", "accept", "drop", "drop", "reject"])
        if r.random() < 0.25:
            # A run of rules that differ only in their ports (the nftables
            # backend makes them one rule with a counter map), ports that
            # sometimes overlap, the same verdict.
            shape = {k: v for k, v in rule.items() if k in ("hook", "in", "out", "from", "to")}
            act = r.choice(["accept", "drop"])
            for k in range(r.randint(2, 6)):
                port = r.choice(PORTS + [r.randint(1, 65535)])
                ports = r.choice(["tcp/%d" % port, "udp/%d" % port, "tcp/%d-%d" % (port, min(65535, port + r.randint(1, 100))),
                                  "[tcp/%d, udp/%d]" % (port, port)])
                run = dict(shape, name="r%dp%d" % (i, k), service=ports, action=act)
                lines.append("  - { %s }" % ", ".join("%s: %s" % kv for kv in run.items()))
        if rule["action"] == "reject" and r.random() < 0.5:
            rule["reject-with"] = r.choice(["port-unreachable", "admin-prohibited", "host-unreachable"])
        if r.random() < 0.2:
            rule["log"] = "true"
        if r.random() < 0.15:
            # 1/hour refills nothing during the test: exactly burst packets
            # match, the rest go on to later rules, in both backends alike.
            rule["limit"] = "{ rate: 1/hour, burst: %d, per: %s }" % (r.randint(1, 4), r.choice(["rule", "source"]))
        lines.append("  - { %s }" % ", ".join("%s: %s" % kv for kv in rule.items()))
    return "\n".join(lines) + "\n"


def gen_packets(r, n):
    from scapy.layers.inet import ICMP, IP, TCP, UDP
    from scapy.layers.inet6 import ICMPv6EchoRequest, ICMPv6EchoReply, ICMPv6DestUnreach, IPv6, IPv6ExtHdrDestOpt, \
        IPv6ExtHdrHopByHop
    from scapy.layers.sctp import SCTP
    from scapy.packet import Raw

    pkts = []
    for i in range(n):
        iface = r.randint(0, 1)
        v6 = r.random() < 0.45
        local = r.random() < 0.2
        if v6:
            src = V6_SRC[iface] % r.choice([2, 7, 0x55, 0xffff])
            dst = r.choice(LOCAL_DST[2:]) if local else r.choice(V6_DST)
        else:
            src = V4_SRC[iface] % r.choice([2, 7, 55, 77, 200])
            dst = r.choice(LOCAL_DST[:2]) if local else r.choice(V4_DST)
        proto = r.choice(["tcp", "tcp", "udp", "udp", "icmp", "sctp", "gre"])
        tag = TAG + struct.pack("!I", i)
        sport, dport = r.choice(PORTS + [r.randint(1024, 65535)]), r.choice(PORTS + [r.randint(1, 65535)])
        if proto == "tcp":
            l4 = TCP(sport=sport, dport=dport, flags=r.choice(["S", "S", "SA", "A", "R", "F", "SF"]), seq=r.randint(0, 2**31)) / Raw(tag)
        elif proto == "udp":
            l4 = UDP(sport=sport, dport=dport) / Raw(tag)
        elif proto == "sctp":
            l4 = SCTP(sport=sport, dport=dport, tag=r.randint(1, 2**31)) / Raw(tag)
        elif proto == "icmp":
            if v6:
                l4 = r.choice([ICMPv6EchoRequest(), ICMPv6EchoReply(), ICMPv6DestUnreach()]) / Raw(tag)
            else:
                l4 = ICMP(type=r.choice([8, 0, 3, 13])) / Raw(tag)
        else:
            l4 = Raw(b"\x00\x00\x08\x00" + tag)
        if v6:
            ip = IPv6(src=src, dst=dst, hlim=64)
            chain = r.choice([0, 0, 0, 1, 2, 3])
            if chain:
                ip = ip / IPv6ExtHdrHopByHop() if r.random() < 0.3 else ip
                for _ in range(chain):
                    ip = ip / IPv6ExtHdrDestOpt()
            if proto == "gre":
                ip.lastlayer().nh = 47
            pkt = ip / l4
        else:
            ip = IP(src=src, dst=dst, ttl=64)
            if proto == "gre":
                ip.proto = 47
            pkt = ip / l4
        raw = bytes(pkt)
        pkts.append({"id": i, "iface": iface, "v6": v6, "hex": raw.hex(), "summary": "c%d: %s" % (iface, pkt.summary())})
    return pkts


def cmd_gen(seed, out):
    r = random.Random(int(seed))
    with open(os.path.join(out, "policy.yaml"), "w") as f:
        f.write(gen_policy(r))
    for name, entries in gen_dynamic(r).items():
        with open(os.path.join(out, "dyn-%s.txt" % name), "w") as f:
            f.write("".join(e + "\n" for e in entries))
    with open(os.path.join(out, "packets.json"), "w") as f:
        json.dump(gen_packets(r, int(os.environ.get("NFBOX_DIFF_PACKETS", "150"))), f)


def cmd_send(path, mac0, mac1):
    pkts = json.load(open(path))
    socks = []
    for ifname in ("c0", "c1"):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((ifname, 0))
        socks.append(s)
    macs = [bytes.fromhex(m.replace(":", "")) for m in (mac0, mac1)]
    for p in pkts:
        s = socks[p["iface"]]
        eth = macs[p["iface"]] + s.getsockname()[4] + (b"\x86\xdd" if p["v6"] else b"\x08\x00")
        s.send(eth + bytes.fromhex(p["hex"]))
        time.sleep(0.002)  # in order, and no queue overflows
    return 0


def cmd_sniff(out, seconds):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    socks = []
    for ifname in ("s0", "s1"):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
        s.bind((ifname, 0))
        socks.append(s)
    seen = set()
    end = time.time() + float(seconds)
    with open(out + ".ready", "w"):
        pass
    while time.time() < end:
        ready, _, _ = select.select(socks, [], [], 0.1)
        for s in ready:
            data = s.recv(70000)
            at = data.find(TAG)
            if at >= 0 and at + 8 <= len(data):
                seen.add(struct.unpack("!I", data[at + 4:at + 8])[0])
        if stop and not ready:
            break
    with open(out, "w") as f:
        json.dump(sorted(seen), f)
    return 0


def cmd_compare(d):
    pkts = json.load(open(os.path.join(d, "packets.json")))
    res = {}
    for b in ("bpf", "nftables"):
        res[b] = {"arrived": set(json.load(open(os.path.join(d, b + ".arrived")))),
                  "stats": json.load(open(os.path.join(d, b + ".stats")))}
    bad = 0
    for p in pkts:
        a = [p["id"] in res[b]["arrived"] for b in ("bpf", "nftables")]
        if a[0] != a[1]:
            bad += 1
            print("verdict differs for packet %d (%s): bpf %s, nftables %s\n    %s" %
                  (p["id"], p["summary"], "forwarded" if a[0] else "not forwarded",
                   "forwarded" if a[1] else "not forwarded", p["hex"]))

    def counts(st):
        c = {(r["hook"], r["rule"]): r["packets"] for r in st["rules"]}
        c[("all", "(established)")] = st["established"]["packets"]
        return c
    cb, cn = counts(res["bpf"]["stats"]), counts(res["nftables"]["stats"])
    for k in sorted(set(cb) | set(cn)):
        if cb.get(k) != cn.get(k):
            bad += 1
            print("counter differs for %s rule %s: bpf %s, nftables %s" % (k[0], k[1], cb.get(k), cn.get(k)))
    forwarded = len(res["bpf"]["arrived"])
    print("%d packets, %d forwarded by bpf, %d disagreements" % (len(pkts), forwarded, bad))
    return 1 if bad else 0


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    fn = {"gen": cmd_gen, "send": cmd_send, "sniff": cmd_sniff, "compare": cmd_compare}[cmd]
    sys.exit(fn(*args) or 0)


if __name__ == "__main__":
    main()
