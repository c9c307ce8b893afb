#!/usr/bin/python3
"""Traffic helpers for nfbox's namespace tests. Run inside a namespace
(ip netns exec NS tests/lib/net.py CMD ...). Every command is bounded in
time and prints one result line; the exit status says success.

  udp-recv PORT TIMEOUT            print "got N BYTES SHA" per datagram until timeout
  udp-send HOST PORT SIZE [COUNT]  send COUNT datagrams of SIZE bytes (pattern)
  tcp-listen PORT TIMEOUT          accept one connection, echo until EOF
  tcp-connect HOST PORT TIMEOUT    exit 0 if the connection is established
  tcp-stream HOST PORT SECONDS     send/echo continuously; print bytes and the
                                   longest stall; exit 1 if it breaks
  frags HOST PORT MODE             scapy: send crafted IPv4/IPv6 fragments
"""
import hashlib
import socket
import sys
import time


def family(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def payload(size):
    pat = bytes(range(256))
    return (pat * (size // 256 + 1))[:size]


def udp_recv(port, timeout):
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", int(port)))
    s.settimeout(0.2)
    end = time.time() + float(timeout)
    n = 0
    while time.time() < end:
        try:
            data, _ = s.recvfrom(70000)
        except socket.timeout:
            continue
        n += 1
        ok = data == payload(len(data))
        print("got %d %s %s" % (len(data), hashlib.sha1(data).hexdigest()[:12], "intact" if ok else "CORRUPT"), flush=True)
    print("total %d" % n, flush=True)


def udp_send(host, port, size, count=1):
    s = socket.socket(family(host), socket.SOCK_DGRAM)
    for _ in range(int(count)):
        s.sendto(payload(int(size)), (host, int(port)))
        time.sleep(0.01)
    print("sent %s x %s" % (count, size))


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


def tcp_stream(host, port, seconds):
    s = socket.socket(family(host), socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect((host, int(port)))
    block = payload(4096)
    end = time.time() + float(seconds)
    total, stall, last = 0, 0.0, time.time()
    try:
        while time.time() < end:
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


def frags(host, port, mode):
    """Crafted fragments of one UDP datagram of 3000 bytes to host:port."""
    from scapy.all import IP, IPv6, UDP, Raw, fragment, send, IPv6ExtHdrFragment, fragment6
    import random

    data = payload(3000)
    port = int(port)
    if ":" in host:
        pkt = IPv6(dst=host) / IPv6ExtHdrFragment(id=random.randint(1, 2**31)) / UDP(sport=4242, dport=port) / Raw(data)
        fr = fragment6(pkt, 1280)
    else:
        pkt = IP(dst=host, id=random.randint(1, 65535)) / UDP(sport=4242, dport=port) / Raw(data)
        fr = fragment(pkt, fragsize=1200)
    if mode == "in-order":
        pass
    elif mode == "reverse":
        fr = list(reversed(fr))
    elif mode == "duplicate":
        fr = [f for f in fr for _ in (0, 1)]
    elif mode == "tiny-first":
        # First fragment of 8 bytes: the UDP header alone, no room for more.
        if ":" in host:
            raise SystemExit("tiny-first is IPv4 only here")
        fr = fragment(pkt, fragsize=8)
    elif mode == "overlap":
        # A second copy of the second fragment that overlaps the first one
        # with different bytes: RFC 5722 (IPv6) requires dropping the
        # datagram; IPv4 reassembly must never let it change the ports.
        if ":" in host:
            raise SystemExit("overlap is IPv4 only here")
        evil = pkt.copy()
        evil[UDP].dport = 9
        efr = fragment(evil, fragsize=1200)
        first = efr[0]
        first.frag = 0
        fr = [fr[0], fr[1], first, fr[2]] if len(fr) > 2 else fr
    else:
        raise SystemExit("unknown mode " + mode)
    send(fr, verbose=False)
    print("sent %d fragments (%s)" % (len(fr), mode))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    fn = {"udp-recv": udp_recv, "udp-send": udp_send, "tcp-listen": tcp_listen,
          "tcp-connect": tcp_connect, "tcp-stream": tcp_stream, "frags": frags}[cmd]
    sys.exit(fn(*args) or 0)


if __name__ == "__main__":
    main()
