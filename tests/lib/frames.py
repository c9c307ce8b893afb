#!/usr/bin/python3
"""Raw Ethernet frames for nfbox's capture tests, and a strict pcapng reader
to compare a capture with what was sent. Standard library only.

  send IFACE DST-MAC MANIFEST [--seed S] [--burst N] [--gap SECONDS]
                              [--loop SECONDS] [--prefix N] [--bypass 1]
      Read frame specifications from stdin, one per line, and send the
      frames through an AF_PACKET socket on IFACE (run it inside the sending
      namespace), sleeping GAP (0.002) after every BURST (32) frames. Each
      frame's payload is pseudo-random, derived from the seed and the frame's
      index, so every run sends the same bytes. MANIFEST gets one line per
      frame: "INDEX LENGTH SHA256 LABEL", and with --prefix the SHA256 of the
      frame's first N bytes (what a capture with snaplen N keeps). With --loop
      the specification is sent over and over for that long (or until
      SIGTERM). --bypass 1 sets PACKET_QDISC_BYPASS: the tx queue is then
      chosen by the sending CPU (CPU mod queues), not by a flow hash, so a
      sender pinned to CPU N feeds rx queue N of a veth peer.
      Prints "sent N frames, B bytes".

      A specification line: KIND LENGTH [key=value ...]
        KIND    udp4 udp6 tcp4 tcp6 icmp4 icmp6 arp
        LENGTH  the whole frame from the Ethernet header (no FCS): N, or
                rand:LO-HI for a pseudo-random length per frame
        count=N (frames of this line, default 1), src=, dst= (IP addresses),
        sport=, dport= (default 40000, 9000), vlan=ID (an 802.1Q tag),
        svlan=ID (an 802.1ad tag outside it), ipopt=N (IPv4: N bytes of
        options), frag=N (IPv4: a later fragment, offset N * 8, no L4 header),
        ext=E,E (IPv6 extension headers in order: hbh, dst, frag (a first
        fragment), frag-later (a later one: no L4 header after it)),
        label= (free text for the checks below; default: KIND)

  check PCAPNG... [--manifest M] [--labels L,L] [--want all|prefix|suffix|none]
                  [--ifname IF] [--max-file-size BYTES] [--count N] [--snaplen N]
      Walk every block of each file (given oldest first) and fail on anything
      a reader could stumble on: a truncated or misaligned block, a length
      that differs from its trailer, an EPB longer than the snaplen or with
      orig_len != captured length (with --snaplen N: unless it is cut at
      exactly N), an interface name or timestamp resolution other than
      expected (nanoseconds), timestamps that go backwards or are not near
      now. Then compare the packets, in order, with the manifest frames (those
      whose label is in --labels when given): all of them (--want all), the
      first ones (prefix: as many as were captured), the last ones (suffix),
      or not at all (none).
      With --want merge and --manifest A,B (frames sent by several senders at
      once, e.g. onto different rx queues): every frame of each, each
      manifest's frames in its own order, interleaved in any way.
      Prints "ok N packets in F files" or "bad: WHY"; exit status 0 or 1.

  count PCAPNG...
      The packets (enhanced packet blocks) the files hold so far, for a
      capture still writing them: a missing file counts none, a block not
      yet whole ends the count. Prints N.

  ethtool-stats IFACE
      The driver's statistics (ethtool -S, without needing ethtool), one
      "NAME VALUE" line each: veth's rx_queue_N_xdp_packets and the like.
"""
import array
import hashlib
import os
import random
import signal
import socket
import struct
import sys
import time

ETH_P_IP, ETH_P_IPV6, ETH_P_ARP = 0x0800, 0x86DD, 0x0806
ETH_P_8021Q, ETH_P_8021AD = 0x8100, 0x88A8
DEFAULTS = {
    4: ("198.51.100.1", "203.0.113.1"),
    6: ("2001:db8:1::1", "2001:db8:2::1"),
}


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(array.array("H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def mac(s):
    return bytes(int(x, 16) for x in s.split(":"))


def ipv4(proto, src, dst, payload, frag_off=0, options=0):
    """options: bytes of IP options (NOPs, then an end of list)."""
    opt = b"\x01" * (options - 1) + b"\x00" if options else b""
    h = struct.pack("!BBHHHBBH4s4s", 0x45 + options // 4, 0, 20 + options + len(payload), 1,
                    frag_off, 64, proto, 0, socket.inet_pton(socket.AF_INET, src),
                    socket.inet_pton(socket.AF_INET, dst)) + opt
    return h[:10] + struct.pack("=H", csum(h)) + h[12:] + payload


def ipv6(nh, src, dst, payload):
    return struct.pack("!IHBB16s16s", 6 << 28, len(payload), nh, 64,
                       socket.inet_pton(socket.AF_INET6, src),
                       socket.inet_pton(socket.AF_INET6, dst)) + payload


def pseudo(fam, proto, src, dst, length):
    if fam == 4:
        return struct.pack("!4s4sBBH", socket.inet_pton(socket.AF_INET, src),
                           socket.inet_pton(socket.AF_INET, dst), 0, proto, length)
    return struct.pack("!16s16sIxxxB", socket.inet_pton(socket.AF_INET6, src),
                       socket.inet_pton(socket.AF_INET6, dst), length, proto)


def l4(fam, kind, src, dst, sport, dport, body):
    """The transport header and body, checksummed; body fills the rest."""
    if kind == "udp":
        proto, seg = 17, struct.pack("!HHHH", sport, dport, 8 + len(body), 0) + body
        off = 6
    elif kind == "tcp":
        proto = 6
        seg = struct.pack("!HHIIBBHHH", sport, dport, 1, 1, 5 << 4, 0x10, 65535, 0, 0) + body
        off = 16
    else:  # icmp echo request
        proto = 1 if fam == 4 else 58
        seg = struct.pack("!BBHHH", 8 if fam == 4 else 128, 0, 0, 0x4E46, 1) + body
        off = 2
    c = csum((pseudo(fam, proto, src, dst, len(seg)) if proto != 1 else b"") + seg)
    if proto == 17 and c == 0:
        c = 0xFFFF
    return proto, seg[:off] + struct.pack("=H", c) + seg[off + 2:]  # csum() sums native words


L4_HEAD = {"udp": 8, "tcp": 20, "icmp": 8}
IP6_EXT = {"hbh": 0, "dst": 60, "frag": 44, "frag-later": 44}  # name: next-header value
KINDS = ("udp4", "udp6", "tcp4", "tcp6", "icmp4", "icmp6", "arp")


def overhead(kind, opts):
    """Bytes before the random payload."""
    n = 14 + 4 * (("vlan" in opts) + ("svlan" in opts))
    if kind == "arp":
        return n + 28
    if kind.endswith("4"):
        n += 20 + int(opts.get("ipopt", 0))
        later = int(opts.get("frag", 0)) > 0
    else:
        exts = opts.get("ext", "").split(",") if opts.get("ext") else []
        n += 40 + 8 * len(exts)
        later = "frag-later" in exts
    return n + (0 if later else L4_HEAD[kind[:-1]])


def l2(eth, opts, ethertype):
    tags = b""
    if "svlan" in opts:  # 802.1ad outer tag (QinQ)
        tags += struct.pack("!HH", ETH_P_8021AD, int(opts["svlan"]))
    if "vlan" in opts:
        tags += struct.pack("!HH", ETH_P_8021Q, int(opts["vlan"]))
    return eth + tags + struct.pack("!H", ethertype)


def build(kind, length, opts, rnd, eth):
    fam = 6 if kind.endswith("6") else 4
    src = opts.get("src", DEFAULTS[fam][0])
    dst = opts.get("dst", DEFAULTS[fam][1])
    sport, dport = int(opts.get("sport", 40000)), int(opts.get("dport", 9000))
    body = rnd.randbytes(length - overhead(kind, opts))
    if kind == "arp":
        tail = struct.pack("!HHBBH6s4s6s4s", 1, ETH_P_IP, 6, 4, 1, eth[6:12],
                           socket.inet_pton(socket.AF_INET, src), b"\0" * 6,
                           socket.inet_pton(socket.AF_INET, dst))
        return l2(eth, opts, ETH_P_ARP) + tail + body
    if fam == 4:
        frag = int(opts.get("frag", 0))  # a later fragment (offset in 8 bytes) has no L4 header
        proto, seg = (17, body) if frag else l4(4, kind[:-1], src, dst, sport, dport, body)
        return l2(eth, opts, ETH_P_IP) + ipv4(proto, src, dst, seg, frag_off=frag,
                                               options=int(opts.get("ipopt", 0)))
    exts = opts.get("ext", "").split(",") if opts.get("ext") else []
    if "frag-later" in exts:
        proto, seg = 17, body
    else:
        proto, seg = l4(6, kind[:-1], src, dst, sport, dport, body)
    for e in reversed(exts):  # innermost first
        if e.startswith("frag"):
            seg = struct.pack("!BBHI", proto, 0, (185 << 3 if e == "frag-later" else 0) | 1, 7) + seg
        else:  # hop-by-hop or destination options: one PadN option
            seg = struct.pack("!BBBB4x", proto, 0, 1, 4) + seg
        proto = IP6_EXT[e]
    return l2(eth, opts, ETH_P_IPV6) + ipv6(proto, src, dst, seg)


def parse_spec(lines):
    spec = []
    for ln in lines:
        f = ln.split("#", 1)[0].split()
        if not f:
            continue
        kind, length = f[0], f[1]
        if kind not in KINDS:
            sys.exit("frames: unknown kind %r" % kind)
        opts = dict(x.split("=", 1) for x in f[2:])
        if length.startswith("rand:"):
            lo, hi = (int(x) for x in length[5:].split("-"))
        else:
            lo = hi = int(length)
        if lo < overhead(kind, opts):
            sys.exit("frames: %s %s frames are at least %d bytes" % (kind, f[2:], overhead(kind, opts)))
        spec.append((kind, lo, hi, int(opts.pop("count", 1)), opts))
    return spec


def send(argv):
    ifname, dst_mac, manifest = argv[0], argv[1], argv[2]
    o = dict(zip(argv[3::2], argv[4::2]))
    seed = o.get("--seed", "nfbox")
    burst, gap = int(o.get("--burst", 32)), float(o.get("--gap", 0.002))
    loop = float(o.get("--loop", 0))
    prefix = int(o.get("--prefix", 0))
    spec = parse_spec(sys.stdin)
    with open("/sys/class/net/%s/address" % ifname) as f:
        eth = mac(dst_mac) + mac(f.read().strip())
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    s.bind((ifname, 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    if o.get("--bypass") == "1":
        s.setsockopt(263, 20, 1)  # SOL_PACKET, PACKET_QDISC_BYPASS
    idx = nbytes = 0
    end = time.monotonic() + loop
    with open(manifest, "w") as m:
        while not stop:
            for kind, lo, hi, count, opts in spec:
                for _ in range(count):
                    rnd = random.Random("%s:%d" % (seed, idx))
                    length = rnd.randint(lo, hi)
                    frame = build(kind, length, opts, rnd, eth)
                    assert len(frame) == length, (kind, length, len(frame))
                    s.send(frame)
                    m.write("%d %d %s %s%s\n" % (idx, length, hashlib.sha256(frame).hexdigest(),
                                                  opts.get("label", kind),
                                                  " " + hashlib.sha256(frame[:prefix]).hexdigest()
                                                  if prefix else ""))
                    idx += 1
                    nbytes += length
                    if burst and idx % burst == 0:
                        time.sleep(gap)
                    if stop:
                        break
                if stop:
                    break
            if not loop or time.monotonic() >= end:
                break
    print("sent %d frames, %d bytes" % (idx, nbytes), flush=True)


class Bad(Exception):
    pass


def read_pcapng(path, want_ifname, want_snaplen):
    """The packets of one file as (sha256, caplen, origlen), after checking
    every block; raises Bad with the reason."""
    data = open(path, "rb").read()
    off, pkts, snaplen, tsresol, ifname, last_ts = 0, [], None, None, None, 0
    now = time.time_ns()
    while off < len(data):
        if len(data) - off < 12:
            raise Bad("%s: %d stray bytes at offset %d" % (path, len(data) - off, off))
        btype, blen = struct.unpack_from("<II", data, off)
        if blen < 12 or blen % 4 or off + blen > len(data):
            raise Bad("%s: block at %d: length %d (file %d bytes)" % (path, off, blen, len(data)))
        if struct.unpack_from("<I", data, off + blen - 4)[0] != blen:
            raise Bad("%s: block at %d: trailing length differs" % (path, off))
        body = data[off + 8:off + blen - 4]
        if off == 0 and btype != 0x0A0D0D0A:
            raise Bad("%s: does not start with a section header block" % path)
        if btype == 0x0A0D0D0A:
            magic, major, minor = struct.unpack_from("<IHH", body)
            if magic != 0x1A2B3C4D or (major, minor) != (1, 0):
                raise Bad("%s: SHB magic %#x version %d.%d" % (path, magic, major, minor))
        elif btype == 1:  # IDB
            linktype, _, snaplen = struct.unpack_from("<HHI", body)
            if linktype != 1:
                raise Bad("%s: link type %d, not Ethernet" % (path, linktype))
            p = 8
            while p + 4 <= len(body):
                code, n = struct.unpack_from("<HH", body, p)
                v = body[p + 4:p + 4 + n]
                if code == 0:
                    break
                if code == 2:
                    ifname = v.rstrip(b"\0").decode()
                elif code == 9:
                    tsresol = v[0]
                p += 4 + (n + 3) // 4 * 4
        elif btype == 6:  # EPB
            if snaplen is None:
                raise Bad("%s: packet before the interface description" % path)
            ifid, hi, lo, caplen, origlen = struct.unpack_from("<IIIII", body)
            if ifid != 0 or 20 + caplen > len(body) or blen != 32 + (caplen + 3) // 4 * 4:
                raise Bad("%s: EPB at %d: ifid %d caplen %d block %d" % (path, off, ifid, caplen, blen))
            cut = want_snaplen and caplen == want_snaplen and origlen > caplen
            if caplen > snaplen or (origlen != caplen and not cut):
                raise Bad("%s: EPB at %d: caplen %d orig_len %d snaplen %d" % (path, off, caplen, origlen, snaplen))
            ts = hi << 32 | lo
            if ts < last_ts or abs(ts - now) > 3600 * 10**9:
                raise Bad("%s: EPB at %d: timestamp %d (previous %d, now %d)" % (path, off, ts, last_ts, now))
            last_ts = ts
            pkts.append((hashlib.sha256(body[20:20 + caplen]).hexdigest(), caplen, origlen))
        elif btype != 5:  # ISB is fine, nothing else is expected
            raise Bad("%s: unexpected block type %#x at %d" % (path, btype, off))
        off += blen
    if snaplen is None:
        raise Bad("%s: no interface description block" % path)
    if tsresol != 9:
        raise Bad("%s: if_tsresol %r, not 9 (nanoseconds)" % (path, tsresol))
    if want_ifname and ifname != want_ifname:
        raise Bad("%s: if_name %r, not %r" % (path, ifname, want_ifname))
    if want_snaplen and snaplen != want_snaplen:
        raise Bad("%s: snaplen %d, not %d" % (path, snaplen, want_snaplen))
    return pkts


def check(argv):
    o = {}
    i = 0
    files = []
    while i < len(argv):
        if argv[i].startswith("--"):
            o[argv[i]] = argv[i + 1]
            i += 2
        else:
            files.append(argv[i])
            i += 1
    want = o.get("--want", "all" if "--manifest" in o else "none")
    snaplen = int(o.get("--snaplen", 0))
    try:
        got = []
        for f in files:
            if "--max-file-size" in o and os.path.getsize(f) > int(o["--max-file-size"]):
                raise Bad("%s: %d bytes, more than %s" % (f, os.path.getsize(f), o["--max-file-size"]))
            got += read_pcapng(f, o.get("--ifname"), snaplen)
        if "--count" in o and len(got) != int(o["--count"]):
            raise Bad("%d packets, expected %s" % (len(got), o["--count"]))
        if want == "merge":
            return check_merge(got, o["--manifest"].split(","), len(files))
        if want != "none":
            labels = set(o["--labels"].split(",")) if "--labels" in o else None
            sent = []
            for ln in open(o["--manifest"]):
                idx, length, sha, label, *cut = ln.split()
                if snaplen and int(length) > snaplen:
                    sha = cut[0]  # the sender's --prefix must be the snaplen
                if labels is None or label in labels:
                    sent.append((int(idx), int(length), sha, label))
            if want == "prefix":
                sent = sent[:len(got)]
            elif want == "suffix":
                sent = sent[len(sent) - len(got):] if got else []
            if len(got) != len(sent):
                raise Bad("%d packets captured, %d expected" % (len(got), len(sent)))
            for n, (g, s) in enumerate(zip(got, sent)):
                if g[0] != s[2] or g[2] != s[1]:
                    raise Bad("packet %d (%d of %d bytes) is not frame %d (%d bytes, %s) as sent"
                              % (n, g[1], g[2], s[0], s[1], s[3]))
    except Bad as e:
        print("bad: %s" % e)
        return 1
    except OSError as e:
        print("bad: %s" % e)
        return 1
    print("ok %d packets in %d files" % (len(got), len(files)))
    return 0


def check_merge(got, manifests, nfiles):
    owner = {}
    for m, path in enumerate(manifests):
        for ln in open(path):
            owner[ln.split()[2]] = m
    for m, path in enumerate(manifests):
        sent = [ln.split()[2] for ln in open(path)]
        mine = [g[0] for g in got if owner.get(g[0]) == m]
        if mine != sent:
            print("bad: %s: %d frames sent, %d captured%s" % (path, len(sent), len(mine),
                  "" if len(mine) != len(sent) else ", not in the order sent"))
            return 1
    if len(got) != len(owner):
        print("bad: %d packets captured, %d sent" % (len(got), len(owner)))
        return 1
    print("ok %d packets in %d files" % (len(got), nfiles))
    return 0


def ethtool_stats(ifname):
    import ctypes
    import fcntl

    SIOCETHTOOL, GDRVINFO, GSTRINGS, GSTATS, ETH_SS_STATS = 0x8946, 0x3, 0x1B, 0x1D, 1
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)

    def ioctl(buf):
        ifr = struct.pack("16sP", ifname.encode(), ctypes.addressof(buf)) + bytes(16)
        fcntl.ioctl(s.fileno(), SIOCETHTOOL, ifr)

    drv = ctypes.create_string_buffer(struct.pack("I", GDRVINFO), 196)
    ioctl(drv)
    n = struct.unpack_from("I", drv, 180)[0]  # n_stats, after the five 32-byte names and reserved2
    names = ctypes.create_string_buffer(struct.pack("III", GSTRINGS, ETH_SS_STATS, n), 12 + 32 * n)
    ioctl(names)
    vals = ctypes.create_string_buffer(struct.pack("II", GSTATS, n), 8 + 8 * n)
    ioctl(vals)
    for i in range(n):
        name = names.raw[12 + 32 * i:12 + 32 * (i + 1)].rstrip(b"\0").decode()
        print(name, struct.unpack_from("Q", vals, 8 + 8 * i)[0])


def count(paths):
    n = 0
    for path in paths:
        try:
            data = open(path, "rb").read()
        except FileNotFoundError:
            continue
        off = 0
        while off + 12 <= len(data):
            btype, blen = struct.unpack_from("<II", data, off)
            if blen < 12 or off + blen > len(data):
                break
            n += btype == 6
            off += blen
    print(n)


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("send", "check", "count", "ethtool-stats"):
        sys.exit(__doc__)
    if sys.argv[1] == "count":
        count(sys.argv[2:])
        return 0
    if sys.argv[1] == "send":
        send(sys.argv[2:])
        return 0
    if sys.argv[1] == "ethtool-stats":
        ethtool_stats(sys.argv[2])
        return 0
    return check(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
