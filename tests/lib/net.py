#!/usr/bin/python3
"""Traffic helpers for nfbox's namespace tests. Run inside a namespace
(ip netns exec NS tests/lib/net.py CMD ...). Every command is bounded in
time and prints one result line; the exit status says success.

  udp-recv PORT TIMEOUT [MAX]      print "got N SHA intact|CORRUPT" per datagram until
                                   timeout, MAX datagrams or SIGTERM, then "total N"
  udp-send HOST PORT SIZE [COUNT]  send COUNT datagrams of SIZE bytes (pattern)
  udp-blast HOST PORT COUNT [SRC]  send COUNT small datagrams as fast as it can
                                   (from address SRC)
  udp-say HOST PORT TEXT [SRC]     send one datagram whose payload is TEXT (from SRC)
  tcp-listen PORT TIMEOUT          accept one connection, echo until EOF
  tcp-connect HOST PORT TIMEOUT    exit 0 if the connection is established
  tcp-whoami PORT TIMEOUT [COUNT]  answer each connection (COUNT, default 1) with
                                   "peer ADDR PORT" (the source it sees) and close
  tcp-ask HOST PORT TIMEOUT [SRC]  connect (from address SRC), print the answer's line; exit 1 if none
  tcp-many HOST PORT COUNT TIMEOUT COUNT connections one after another, each
                                   answered by tcp-whoami within TIMEOUT; prints
                                   how many were
  tcp-probe HOST PORT TIMEOUT      print "open", "refused", "timeout" or "error ERRNO",
                                   then the seconds it took
  syn-rst HOST PORT COUNT GAP [SRC]
                                   COUNT connections opened and reset at once (a raw
                                   socket: a SYN, then a RST from the same port, each
                                   from a new port), GAP seconds apart; "sent N"
  udp-whoami PORT TIMEOUT [COUNT]  answer each datagram with "peer ADDR PORT"
  udp-probe HOST PORT TIMEOUT [SPORT]
                                   send one datagram on a connected socket and print
                                   "answer LINE", "timeout" or the ICMP error's errno
                                   name (ECONNREFUSED, EHOSTUNREACH, EACCES...), then
                                   the seconds it took
  tcp-stream HOST PORT SECONDS     send/echo continuously; print bytes and the
                                   longest stall; exit 1 if it breaks
  forge [--local] [--from SRC] HOST PORT SPORT KIND...
                                   one packet per KIND, from source ports SPORT,
                                   SPORT+1... (and address SRC, which may be one no
                                   socket could send from); KIND a TCP segment's flags
                                   (scapy's letters: S, R, F, A, FA, RA; 0 for none),
                                   with no handshake before it, or udp. Sent on a raw
                                   socket, through this host's own stack: run it where
                                   no rules are (the client), or with --local where
                                   this host's output hook is meant to judge them (a
                                   refusal there is no error); print "sent N"
  watch SPORT N SECONDS            print "ready" once listening, then "seen KIND SPORT
                                   DPORT SRC" for each TCP segment or UDP datagram from
                                   source ports SPORT..SPORT+N-1 that arrives here (KIND
                                   as forge's), until SECONDS are up or SIGTERM; then
                                   "total K"
  frags HOST PORT[,PORT] MODE [EVIL-PORT]
                                   send crafted IPv4/IPv6 fragments (a raw socket)
  v6-chain HOST PORT udp|tcp N     an IPv6 UDP datagram, or a TCP SYN (then
                                   "synack" or "no answer"), behind N
                                   destination-options headers
  v6-split-chain HOST PORT         RFC 7112-violating fragments: the first one
                                   holds only part of the header chain
  udp-ticks HOST SECONDS PORT...   one datagram to each PORT every millisecond (a
                                   sequence number in each); print "sent PORT N ERRORS"
                                   (N counts every attempt, failed sends included)
  udp-count SECONDS PORT...        count the datagrams udp-ticks sends, per port, until
                                   the time is up or SIGTERM; print "got PORT N"
  udp-last SECONDS PORT            receive udp-ticks' datagrams; print "last PORT T N": the
                                   send time (time.time()) of the latest that arrived
  udplite-blast, udplite-count     udp-blast and udp-count over UDP-Lite (IP protocol 136)
  push-serve PORT SECONDS [EVERY]  a server that talks unasked: a TCP connection and a
                                   UDP datagram to PORT each get a numbered line every
                                   EVERY seconds (0.05) until SECONDS are up; prints
                                   "peer tcp|udp ADDR"
  push-watch HOST PORT SECONDS FILE
                                   open both (one TCP "go", one UDP datagram), then only
                                   listen: "tcp|udp TIME N" per line received, to FILE
"""
import socket
import struct
import sys
import time


def family(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def payload(size):
    pat = bytes(range(256))
    return (pat * (size // 256 + 1))[:size]


def udp_recv(port, timeout, most=0):
    """Stops at the timeout, after MOST datagrams (0: no limit), or on
    SIGTERM (then, as at the timeout, it first reads what is already
    queued)."""
    import signal

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", int(port)))
    s.settimeout(0.2)
    end = time.time() + float(timeout)
    n = 0
    while not (most and n >= int(most)):
        # at the timeout as on SIGTERM: what is already queued is still read
        # (a loaded machine may start the sender after the time is up)
        if stop or time.time() >= end:
            s.setblocking(False)
        try:
            data, _ = s.recvfrom(70000)
        except (socket.timeout, BlockingIOError):
            if stop or time.time() >= end:
                break
            continue
        n += 1
        ok = data == payload(len(data))
        import hashlib  # imported here: the probes that hash nothing skip its 4 ms
        print("got %d %s %s" % (len(data), hashlib.sha1(data).hexdigest()[:12], "intact" if ok else "CORRUPT"), flush=True)
    print("total %d" % n, flush=True)


def udp_send(host, port, size, count=1):
    s = socket.socket(family(host), socket.SOCK_DGRAM)
    for _ in range(int(count)):
        s.sendto(payload(int(size)), (host, int(port)))
        time.sleep(0.01)
    print("sent %s x %s" % (count, size))


UDPLITE = 136


def udp_blast(host, port, count, src=None, proto=0):
    s = socket.socket(family(host), socket.SOCK_DGRAM, proto)
    if src:
        s.bind((src, 0))
    sent = 0
    for _ in range(int(count)):
        try:
            s.sendto(b"x" * 16, (host, int(port)))
            sent += 1
        except OSError:
            time.sleep(0.001)
    print("sent %d" % sent)


def udp_say(host, port, text, src=None):
    s = socket.socket(family(host), socket.SOCK_DGRAM)
    if src:
        s.bind((src, 0))
    s.sendto(text.encode(), (host, int(port)))
    print("sent 1")


def tcp_listen(port, timeout):
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::", int(port)))
    s.listen(4)
    s.settimeout(float(timeout))
    try:
        c, _ = s.accept()
    except socket.timeout:
        print("no connection")
        return 1
    c.settimeout(float(timeout))
    total = 0
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            c.sendall(d)
            total += len(d)
    except (socket.timeout, ConnectionError):
        pass
    print("echoed %d" % total)
    return 0


def tcp_connect(host, port, timeout):
    s = socket.socket(family(host), socket.SOCK_STREAM)
    s.settimeout(float(timeout))
    try:
        s.connect((host, int(port)))
    except (socket.timeout, OSError) as e:
        print("failed: %s" % e)
        return 1
    s.sendall(b"hello")
    try:
        got = s.recv(5)
    except socket.timeout:
        print("connected, no echo")
        return 1
    print("connected" if got == b"hello" else "bad echo")
    return 0 if got == b"hello" else 1


def _unmapped(addr):
    return addr[7:] if addr.startswith("::ffff:") else addr


def tcp_whoami(port, timeout, count=1):
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::", int(port)))
    s.listen(8)
    end = time.time() + float(timeout)
    served = 0
    while served < int(count) and time.time() < end:
        s.settimeout(max(0.01, end - time.time()))
        try:
            c, peer = s.accept()
        except socket.timeout:
            break
        line = "peer %s %d" % (_unmapped(peer[0]), peer[1])
        print(line, flush=True)
        c.sendall((line + "\n").encode())
        c.close()
        served += 1
    return 0 if served else 1


def tcp_ask(host, port, timeout, src=None):
    s = socket.socket(family(host), socket.SOCK_STREAM)
    s.settimeout(float(timeout))
    try:
        if src:
            s.bind((src, 0))
        s.connect((host, int(port)))
        data = s.recv(200)
    except (socket.timeout, OSError) as e:
        print("failed: %s" % e)
        return 1
    print(data.decode(errors="replace").strip())
    return 0 if data else 1


def tcp_many(host, port, count, timeout):
    ok = 0
    for _ in range(int(count)):
        s = socket.socket(family(host), socket.SOCK_STREAM)
        s.settimeout(float(timeout))
        try:
            s.connect((host, int(port)))
            ok += s.recv(64).startswith(b"peer")
        except OSError:
            pass
        s.close()
    print(ok)
    return 0


def tcp_sink(port, seconds):
    """Accept every connection on PORT (either family) and keep it open
    until its peer closes it or SECONDS are over."""
    import select

    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::", int(port)))
    s.listen(128)
    open_, end = [], time.time() + float(seconds)
    while time.time() < end:
        r, _, _ = select.select([s] + open_, [], [], max(0.01, end - time.time()))
        for x in r:
            if x is s:
                open_.append(s.accept()[0])
            elif not x.recv(4096):
                x.close()
                open_.remove(x)
    return 0


def tcp_hold(host, port, count, timeout, seconds, src=None):
    """COUNT connections one after another (each given TIMEOUT to open),
    from SRC if given; prints a line per attempt ("ok N" or "fail N") and
    then "held N", and keeps the open ones for SECONDS (until killed)."""
    held = []
    for i in range(int(count)):
        s = socket.socket(family(host), socket.SOCK_STREAM)
        s.settimeout(float(timeout))
        if src:
            s.bind((src, 0))
        try:
            s.connect((host, int(port)))
            held.append(s)
            print("ok %d" % i, flush=True)
        except OSError:
            s.close()
            print("fail %d" % i, flush=True)
    print("held %d" % len(held), flush=True)
    time.sleep(float(seconds))
    return 0


def tcp_probe(host, port, timeout, src=None):
    import errno

    s = socket.socket(family(host), socket.SOCK_STREAM)
    s.settimeout(float(timeout))
    if src:
        s.bind((src, 0))
    t0 = time.time()
    try:
        s.connect((host, int(port)))
        what = "open"
    except socket.timeout:
        what = "timeout"
    except ConnectionRefusedError:
        what = "refused"
    except OSError as e:
        what = "error %s" % errno.errorcode.get(e.errno, e.errno)
    print("%s %.3f" % (what, time.time() - t0))
    return 0


def _tcp_segment(src, dst, sport, dport, seq, flags):
    """A bare TCP header (no options) checksummed for src and dst."""
    return tcp_segment(src, dst, sport, dport, seq, 0, flags, 65535)


def syn_rst(host, port, count, gap, src=None):
    import os
    fam, port, count = family(host), int(port), int(count)
    if not src:
        u = socket.socket(fam, socket.SOCK_DGRAM)
        u.connect((host, port))
        src = u.getsockname()[0]
        u.close()
    s = socket.socket(fam, socket.SOCK_RAW, socket.IPPROTO_TCP)
    s.bind((src, 0))
    base = 20000 + (os.getpid() * 97) % 40000
    for i in range(count):
        if i:
            time.sleep(float(gap))  # at least GAP between pairs, even late (never two at once)
        sport = base + i
        s.sendto(_tcp_segment(src, host, sport, port, 1000, 0x02), (host, 0))  # SYN
        s.sendto(_tcp_segment(src, host, sport, port, 1001, 0x04), (host, 0))  # RST
    print("sent %d" % count)
    return 0


def udp_whoami(port, timeout, count=1):
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", int(port)))
    end = time.time() + float(timeout)
    served = 0
    while served < int(count) and time.time() < end:
        s.settimeout(max(0.01, end - time.time()))
        try:
            _, peer = s.recvfrom(2000)
        except socket.timeout:
            break
        line = "peer %s %d" % (_unmapped(peer[0]), peer[1])
        print(line, flush=True)
        s.sendto((line + "\n").encode(), peer)
        served += 1
    return 0 if served else 1


def udp_probe(host, port, timeout, sport=0):
    import errno

    s = socket.socket(family(host), socket.SOCK_DGRAM)
    # Net and host unreachable are "soft" errors: told only with RECVERR.
    if family(host) == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, 25, 1)  # IPV6_RECVERR
    else:
        s.setsockopt(socket.IPPROTO_IP, 11, 1)  # IP_RECVERR
    if int(sport):
        s.bind(("", int(sport)))
    s.settimeout(float(timeout))
    t0 = time.time()
    try:
        s.connect((host, int(port)))
        s.send(b"probe")
        data = s.recv(200)
        what = "answer " + data.decode(errors="replace").strip()
    except socket.timeout:
        what = "timeout"
    except OSError as e:
        what = errno.errorcode.get(e.errno, str(e.errno))
    print("%s %.3f" % (what, time.time() - t0))
    return 0


def tcp_stream(host, port, seconds):
    s = socket.socket(family(host), socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect((host, int(port)))
    block = payload(4096)
    end = time.time() + float(seconds)
    total, stall, last = 0, 0.0, time.time()
    # A round trip every 2 ms at most: a stall of a second stands out all
    # the same, and the stream does not take a core from the suites beside
    # it (unpaced, its two ends cost 5 s of CPU in 8 s).
    pace = last
    try:
        while time.time() < end:
            pace = max(pace + 0.002, last)
            time.sleep(max(0.0, pace - time.time()))
            s.sendall(block)
            got = 0
            while got < len(block):
                d = s.recv(len(block) - got)
                if not d:
                    raise ConnectionError("closed")
                got += len(d)
            now = time.time()
            stall = max(stall, now - last)
            last = now
            total += got
    except (OSError, ConnectionError) as e:
        print("broken after %d bytes: %s" % (total, e))
        return 1
    print("streamed %d bytes, longest stall %.3fs" % (total, stall))
    return 0


def forge_packets(src, host, port, sport, kinds):
    """forge's packets, as scapy made them: IP(dst=host, src=src) / (UDP(sport,
    dport=port) / payload(16), or TCP(sport, dport=port, flags, seq=1000 + i,
    ack=2000 if "A" in KIND else 0)), sport counting up from SPORT."""
    pkts = []
    for i, k in enumerate(kinds):
        if k == "udp":
            proto, l4 = 17, udp_datagram(src, host, sport + i, port, payload(16))
        else:
            proto, l4 = 6, tcp_segment(src, host, sport + i, port, 1000 + i, 2000 if "A" in k else 0,
                                       0 if k == "0" else k)
        pkts.append(ip_packet(src, host, proto, l4))
    return pkts


def forge(*args):
    """Packets no socket would send: segments no handshake led to (what a
    SYN proxy must not let through: a RST, FIN or no flag at all is invalid
    to conntrack and not the proxy's; an ACK is the proxy's to check against
    its cookies), or from an address that is not on the wire."""
    local = args[0] == "--local"
    args = args[1:] if local else args
    src = None
    if args[0] == "--from":
        src, args = args[1], args[2:]
    host, port, sport, kinds = args[0], int(args[1]), int(args[2]), args[3:]
    pkts = forge_packets(src or source_for(host), host, port, sport, kinds)
    send_raw(pkts, refused_ok=local)
    print("sent %d" % len(pkts))
    return 0


def watch(sport, n, seconds):
    import signal
    from scapy.layers.inet import TCP, UDP
    from scapy.layers.inet6 import IPv6  # noqa: F401 (dissects IPv6 frames)
    from scapy.layers.l2 import Ether  # noqa: F401 (dissects frames)
    from scapy.sendrecv import AsyncSniffer

    def seen(p):
        t = p.getlayer(TCP) or p.getlayer(UDP)
        kind = "udp" if isinstance(t, UDP) else (t.flags or "0")
        print("seen %s %d %d %s" % (kind, t.sport, t.dport, p.payload.src), flush=True)

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    lo, hi = int(sport), int(sport) + int(n) - 1
    sn = AsyncSniffer(filter="(tcp or udp) and src portrange %d-%d" % (lo, hi), prn=seen, store=True,
                      started_callback=lambda: print("ready", flush=True))
    sn.start()
    end = time.time() + float(seconds)
    while time.time() < end and not stop:
        time.sleep(0.05)
    got = sn.stop() or []
    print("total %d" % len(got), flush=True)
    return 0


def frags(host, port, mode, evil_port="9"):
    """Crafted fragments of UDP datagrams of 3000 bytes (sport 4242) to
    host:port; PORT may be a comma list (one datagram per port, same mode).
    Fragments carry 1200 (IPv4) or 1232 (IPv6, as fragment6(pkt, 1280))
    bytes of the UDP datagram; all fragments go out in one send().

      in-order   the fragments in order
      reverse    last fragment first
      duplicate  every fragment twice in a row
      tiny-first fragments of 8 bytes: the first one is the UDP header
                 alone (376 fragments)
      overlap    a same-extent copy of the first fragment whose UDP header
                 says dport EVIL_PORT comes after the genuine one (which
                 the kernel keeps, see below)
      overlap-first   the same copy comes before the genuine first fragment
      overlap-partial after the genuine first fragment, a fragment at offset
                 0 that is 8 bytes longer (it overlaps the first and the
                 second fragment) and says dport EVIL_PORT

    Linux (inet_frag_queue_insert) discards a fragment that lies wholly
    inside data it already has as a duplicate (the first copy wins), and
    drops the whole datagram on any other overlap (IPv4 since Linux 4.19;
    RFC 5722 for IPv6).
    """
    import os
    v6 = ":" in host
    # One identification per datagram, distinct between runs (pids grow),
    # so fragments left in a reassembly queue by an earlier case (a
    # duplicate last fragment, the rest of a dropped datagram) never join.
    ident = (os.getpid() * 16) % 0xfff0 + 1 if not v6 else os.getpid() * 16 + 1
    out = frag_packets(source_for(host), host, [int(x) for x in port.split(",")], mode, int(evil_port), ident)
    send_raw(out)
    print("sent %d fragments (%s)" % (len(out), mode))


def frag_packets(src, host, ports, mode, evil_port, ident):
    """frags' fragments (ident: the first datagram's identification), as
    scapy made them: IP(src, dst, id, proto=17, flags, frag) / chunk, or
    IPv6(src, dst) / IPv6ExtHdrFragment(id, nh=17, offset, m) / chunk, of
    the datagram IP(src, dst) / UDP(sport=4242, dport) / payload(3000)."""
    step = 1232 if ":" in host else 1200
    data = payload(3000)

    def split(ident, b, size):
        return [ip_fragment(src, host, 17, ident, o, b[o:o + size], o + size < len(b)) for o in range(0, len(b), size)]

    out = []
    for n, p in enumerate(ports):
        i = ident + n
        b = udp_datagram(src, host, 4242, p, data)
        fr = split(i, b, step)
        if mode == "in-order":
            pass
        elif mode == "reverse":
            fr = list(reversed(fr))
        elif mode == "duplicate":
            fr = [f for f in fr for _ in (0, 1)]
        elif mode == "tiny-first":
            fr = split(i, b, 8)
        elif mode in ("overlap", "overlap-first"):
            evil = split(i, udp_datagram(src, host, 4242, evil_port, data), step)[0]
            fr = [fr[0], fr[1], evil] + fr[2:] if mode == "overlap" else [evil] + fr
        elif mode == "overlap-partial":
            evil = ip_fragment(src, host, 17, i, 0, udp_datagram(src, host, 4242, evil_port, data)[:step + 8], True)
            fr = [fr[0], evil] + fr[1:]
        else:
            raise SystemExit("unknown mode " + mode)
        out += fr
    return out


# ---- packets built by hand, byte for byte what scapy built (without its
# start-up, 0.3-0.5 s of CPU at each run; tests/lib/netpktcheck.py holds
# them against scapy's): IPv4 with TTL 64 and no options, IPv6 with hop
# limit 64, TCP with no options.

def _pton(addr):
    return socket.inet_pton(family(addr), addr)


def _seg_csum(src, dst, proto, seg):
    """A TCP or UDP checksum: over the pseudo-header (RFC 768, RFC 8200 8.1) and seg."""
    if family(dst) == socket.AF_INET6:
        pseudo = struct.pack("!I3xB", len(seg), proto)
    else:
        pseudo = struct.pack("!xBH", proto, len(seg))
    return _csum(_pton(src) + _pton(dst) + pseudo + seg)


def udp_datagram(src, dst, sport, dport, data):
    seg = struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data
    return seg[:6] + struct.pack("!H", _seg_csum(src, dst, 17, seg) or 0xffff) + seg[8:]


TCP_FLAGS = "FSRPAUEC"  # scapy's letters, from the lowest bit


def tcp_segment(src, dst, sport, dport, seq, ack, flags, window=8192):
    """flags: a number or scapy's letters ("S", "FA"...); 8192: scapy's window."""
    if isinstance(flags, str):
        flags = sum(1 << TCP_FLAGS.index(f) for f in flags)
    seg = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, window, 0, 0)
    return seg[:16] + struct.pack("!H", _seg_csum(src, dst, 6, seg)) + seg[18:]


def ip_packet(src, dst, proto, body, ident=1, flags_offset=0):
    """IPv4 (identification ident, 1 as scapy's; flags_offset: the 16 bits of
    the flags and the fragment offset) or IPv6 (proto: the next header)."""
    if family(dst) == socket.AF_INET6:
        return struct.pack("!IHBB", 6 << 28, len(body), proto, 64) + _pton(src) + _pton(dst) + body
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(body), ident, flags_offset, 64, proto, 0, _pton(src), _pton(dst))
    return hdr[:10] + struct.pack("!H", _csum(hdr)) + hdr[12:] + body


def ip_fragment(src, dst, proto, ident, offset, chunk, more):
    """A fragment of a datagram of proto: chunk at offset (bytes, a multiple
    of 8) of its payload; IPv6's in a fragment header (RFC 8200 4.5)."""
    if family(dst) == socket.AF_INET6:
        fh = struct.pack("!BBHI", proto, 0, (offset // 8) << 3 | int(more), ident)
        return ip_packet(src, dst, 44, fh + chunk)
    return ip_packet(src, dst, proto, chunk, ident, (0x2000 if more else 0) | offset // 8)


def send_raw(pkts, refused_ok=False):
    """Each packet as it is (IP header included) through this host's stack,
    to its destination; refused_ok: a packet this host's output hook refuses
    (EPERM) is no error."""
    socks = {}
    for p in pkts:
        v6 = p[0] >> 4 == 6
        fam = socket.AF_INET6 if v6 else socket.AF_INET
        if fam not in socks:
            socks[fam] = socket.socket(fam, socket.SOCK_RAW, socket.IPPROTO_RAW)
        dst = socket.inet_ntop(fam, p[24:40] if v6 else p[16:20])
        try:
            socks[fam].sendto(p, (dst, 0))
        except PermissionError:
            if not refused_ok:
                raise


def source_for(host):
    """The source address this host's routing picks for host (nothing sent):
    what scapy's IP(dst=host).src and IPv6(dst=host).src said. A UDP socket
    connected there tells, but for an IPv4-mapped IPv6 destination, which a
    socket would take for IPv4: ip route tells then."""
    if host.lower().startswith("::ffff:") and "." in host:
        import re
        import subprocess
        out = subprocess.run(["ip", "-6", "-o", "route", "get", host], capture_output=True, text=True, check=True).stdout
        return re.search(r" src (\S+)", out).group(1)
    s = socket.socket(family(host), socket.SOCK_DGRAM)
    s.connect((host, 9))
    return s.getsockname()[0]


def _csum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))
    while total >> 16:
        total = (total & 0xffff) + (total >> 16)
    return (~total) & 0xffff


def _l4(src, dst, proto, sport, dport, payload_bytes=b""):
    """A UDP datagram or a TCP SYN with a valid checksum (RFC 8200 8.1)."""
    if proto == "udp":
        return 17, udp_datagram(src, dst, sport, dport, payload_bytes)
    seg = tcp_segment(src, dst, sport, dport, 1000, 0, 0x02, 65535)
    # (a checksum of 0 written as 0xffff, as this always did: the same sum)
    return 6, seg if seg[16:18] != b"\0\0" else seg[:16] + b"\xff\xff" + seg[18:]


def v6_chain(host, port, proto, n):
    """N destination-options headers of 8 bytes (PadN), then the L4 header:
    the chain the kernel forwards whatever its length."""
    import select
    n, port = int(n), int(port)
    src = source_for(host)
    nh, l4 = _l4(src, host, proto, 4242, port, payload(32) if proto == "udp" else b"")
    chain = b"".join(bytes([60 if i + 1 < n else nh, 0, 1, 4, 0, 0, 0, 0]) for i in range(n))
    pkt = ip_packet(src, host, 60 if n else nh, chain + l4)
    if proto == "udp":
        send_raw([pkt])
        print("sent udp behind %d headers (%d bytes)" % (n, len(pkt)))
        return 0
    # The answer, seen on a raw TCP socket (a copy of each segment that
    # comes in, from its TCP header): a SYN-ACK from host's port to ours.
    r = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_TCP)
    send_raw([pkt])
    end = time.time() + 1.3
    got = False
    while not got and time.time() < end:
        if not select.select([r], [], [], max(0.0, end - time.time()))[0]:
            break
        seg, peer = r.recvfrom(65535)
        if (socket.inet_pton(socket.AF_INET6, peer[0]) == socket.inet_pton(socket.AF_INET6, host) and
                len(seg) >= 14 and struct.unpack("!HH", seg[:4]) == (port, 4242) and seg[13] & 0x12 == 0x12):
            got = True
    print("synack" if got else "no answer")
    return 0 if got else 1


def v6_split_chain(host, port):
    """RFC 7112: the first fragment must hold the whole header chain. Here a
    64-byte destination-options header is cut by the first fragment (which
    carries 24 of its bytes); the second fragment has the rest and the UDP
    datagram. The kernel's reassembly refuses such a first fragment."""
    import os
    port = int(port)
    src = source_for(host)
    nh, l4 = _l4(src, host, "udp", 4242, port, payload(64))
    dstopt = bytes([nh, 7, 1, 60]) + bytes(60)       # 64 bytes, PadN
    frag_payload = dstopt + l4
    ident = os.getpid() * 16 + 3
    first, rest = frag_payload[:24], frag_payload[24:]
    send_raw([ip_fragment(src, host, 60, ident, 0, first, True)])
    send_raw([ip_fragment(src, host, 60, ident, 24, rest, False)])
    print("sent 2 fragments, the chain split between them")
    return 0


def udp_ticks(host, seconds, *ports):
    """Paced by the clock, not by sleep() alone: a late tick sends the
    datagrams it owes at once, so the count matches the time."""
    s = socket.socket(family(host), socket.SOCK_DGRAM)
    start = time.monotonic()
    end = start + float(seconds)
    sent = {int(p): 0 for p in ports}
    errors = {int(p): 0 for p in ports}
    seq = 0
    while True:
        now = time.monotonic()
        if now >= end:
            break
        due = int((now - start) * 1000)
        while seq <= due:
            for p in sent:
                sent[p] += 1
                try:
                    s.sendto(b"tick %d %.6f" % (seq, time.time()), (host, p))
                except OSError:
                    errors[p] += 1  # sent but lost here: the receiver's count shows it
            seq += 1
        time.sleep(max(0.0, start + seq / 1000.0 - time.monotonic()))
    for p, n in sent.items():
        print("sent %d %d %d" % (p, n, errors[p]), flush=True)


def udp_count(seconds, *ports, proto=0, first=False):
    """Datagrams to each port for SECONDS ("got PORT N" each); with first,
    only until one has come (a probe that passes need not wait out its
    window)."""
    import select
    import signal

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    socks = {}
    for p in ports:
        s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM, proto)
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.bind(("::", int(p)))
        s.setblocking(False)
        socks[s] = int(p)
    got = {p: 0 for p in socks.values()}
    print("listening", flush=True)
    end = time.time() + float(seconds)
    while time.time() < end:
        ready, _, _ = select.select(list(socks), [], [], 0.1)
        for s in ready:
            while True:
                try:
                    s.recv(2048)
                except BlockingIOError:
                    break
                got[socks[s]] += 1
        if (stop and not ready) or (first and any(got.values())):
            break
    for p, n in got.items():
        print("got %d %d" % (p, n), flush=True)


def udp_last(seconds, port):
    """The send time of the last tick that arrived: print "last PORT T N"
    (T 0 if none came; N ticks in all). Stops at the timeout or SIGTERM."""
    import select
    import signal

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind(("::", int(port)))
    s.setblocking(False)
    print("listening", flush=True)
    last, n = 0.0, 0
    end = time.time() + float(seconds)
    while time.time() < end and not stop:
        ready, _, _ = select.select([s], [], [], 0.1)
        while ready:
            try:
                data = s.recv(2048)
            except BlockingIOError:
                break
            n += 1
            parts = data.split()
            if len(parts) == 3:
                last = max(last, float(parts[2]))
    print("last %s %.6f %d" % (port, last, n), flush=True)


def tcp_ticks(host, port, seconds, every="0.02"):
    """One TCP connection to HOST:PORT carrying "tick T" lines, one every
    EVERY seconds (T the send time), for SECONDS or until SIGTERM. A stream
    the network stops only fills the socket's buffer, which these few bytes
    do not: the sender goes on, and what the receiver last got tells when
    the stream stopped. Prints "connected" once it is."""
    import signal

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    s = socket.create_connection((host, int(port)), timeout=5)
    print("connected", flush=True)
    s.settimeout(0.5)
    end = time.time() + float(seconds)
    while time.time() < end and not stop:
        try:
            s.send(b"tick %.6f\n" % time.time())
        except socket.timeout:
            pass
        except OSError as e:
            print("broken: %s" % e, flush=True)
            return 1
        time.sleep(float(every))
    return 0


def tcp_last(port, seconds):
    """Accept one connection on PORT and read its "tick T" lines until
    SECONDS or SIGTERM: print "last PORT R N", R the time the last line
    arrived here (0 if none), N the lines in all."""
    import select
    import signal

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    ls = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    ls.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("::", int(port)))
    ls.listen(1)
    print("listening", flush=True)
    end = time.time() + float(seconds)
    conn, last, n, buf = None, 0.0, 0, b""
    while time.time() < end and not stop:
        r, _, _ = select.select([conn or ls], [], [], 0.05)
        if not r:
            continue
        if conn is None:
            conn = ls.accept()[0]
            continue
        data = conn.recv(4096)
        if not data:
            break
        buf += data
        k = buf.count(b"\n")
        if k:
            n += k
            last = time.time()
            buf = buf.rsplit(b"\n", 1)[1]
    print("last %s %.6f %d" % (port, last, n), flush=True)


def push_serve(port, seconds, every="0.05"):
    """After the client's first word, only the server sends: a firewall that
    lost the flow's state drops every packet, and the client, which sends
    nothing more (TCP acknowledges only what arrives), never recreates it."""
    import threading
    port, end, every = int(port), time.time() + float(seconds), float(every)
    out = threading.Lock()

    def say(text):
        with out:
            print(text, flush=True)

    def tcp():
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("0.0.0.0", port))
        ls.listen(1)
        ls.settimeout(max(end - time.time(), 0.1))
        try:
            c, peer = ls.accept()
        except OSError:
            return
        say("peer tcp %s" % peer[0])
        c.recv(16)
        n = 0
        while time.time() < end:
            n += 1
            try:
                c.sendall(b"%d\n" % n)
            except OSError as e:
                say("tcp send failed at %.3f: %s" % (time.time(), e))
                break
            time.sleep(every)
        say("sent tcp %d" % n)

    def udp():
        us = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        us.bind(("0.0.0.0", port))
        us.settimeout(max(end - time.time(), 0.1))
        try:
            _, peer = us.recvfrom(64)
        except OSError:
            return
        say("peer udp %s" % peer[0])
        n = 0
        while time.time() < end:
            n += 1
            try:
                us.sendto(b"%d\n" % n, peer)
            except OSError:
                pass
            time.sleep(every)
        say("sent udp %d" % n)

    ts = [threading.Thread(target=f) for f in (tcp, udp)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def push_watch(host, port, seconds, path):
    import select
    port, end = int(port), time.time() + float(seconds)
    f = open(path, "a", buffering=1)
    t = socket.create_connection((host, port), timeout=5)
    t.sendall(b"go\n")
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.sendto(b"hello\n", (host, port))
    buf = b""
    while time.time() < end:
        r, _, _ = select.select([t, u], [], [], max(end - time.time(), 0))
        now = time.time()
        if u in r:
            data = u.recv(64)
            f.write("udp %.3f %s\n" % (now, data.decode().strip()))
        if t in r:
            data = t.recv(4096)
            if not data:
                break
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                f.write("tcp %.3f %s\n" % (now, line.decode()))
    f.close()


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    fn = {"udp-recv": udp_recv, "udp-send": udp_send, "udp-blast": udp_blast, "udp-say": udp_say, "tcp-listen": tcp_listen,
          "tcp-connect": tcp_connect, "tcp-stream": tcp_stream, "frags": frags,
          "tcp-whoami": tcp_whoami, "tcp-ask": tcp_ask, "tcp-many": tcp_many, "tcp-probe": tcp_probe,
          "tcp-sink": tcp_sink, "tcp-hold": tcp_hold, "forge": forge, "watch": watch, "syn-rst": syn_rst,
          "udp-whoami": udp_whoami, "udp-probe": udp_probe,
          "v6-chain": v6_chain, "v6-split-chain": v6_split_chain,
          "push-serve": push_serve, "push-watch": push_watch,
          "udp-ticks": udp_ticks, "tcp-ticks": tcp_ticks, "tcp-last": tcp_last, "udp-count": udp_count, "udp-last": udp_last,
          "udplite-blast": lambda h, p, n, src=None: udp_blast(h, p, n, src, UDPLITE),
          "udplite-count": lambda sec, *ports: udp_count(sec, *ports, proto=UDPLITE),
          "udp-first": lambda sec, *ports: udp_count(sec, *ports, first=True)}[cmd]
    sys.exit(fn(*args) or 0)


if __name__ == "__main__":
    main()
