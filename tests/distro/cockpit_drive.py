#!/usr/bin/python3
"""The Cockpit pages of nfbox driven in Debian's chromium, headless, through
the DevTools protocol (python3-websocket), for tests/distro/test_cockpit.sh.
Runs in the appliance's network namespace, where cockpit-ws listens on
127.0.0.1:9090; prints "ok NAME" / "FAIL NAME: why" per check; exits 0 if all passed, 1
once it has said what failed (another status: it could not go on).

  cockpit_drive.py operator   log in as admin, turn on administrative access,
                              and do the operator's tasks
  cockpit_drive.py viewer     log in as viewer (the daemon's socket group
                              only): the read-only pages

Environment (from the test): COCKPIT_PASS, COCKPIT_SHOTS (screenshots),
COCKPIT_NET (tests/lib/net.py), COCKPIT_NS_C and COCKPIT_NS_A (the client's
and the appliance's namespaces), COCKPIT_LEADER (the container's pid 1),
COCKPIT_ROOT (its root directory), COCKPIT_C4, COCKPIT_A4, COCKPIT_BANNED
(addresses), COCKPIT_PROBE_LINE (the line of the rule "probe").
"""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import websocket

E = os.environ
FAILED = []


def ok(name):
    print("ok " + name, flush=True)


def fail(name, why):
    FAILED.append(name)
    print("FAIL %s: %s" % (name, " ".join(str(why).split())), flush=True)


class Browser:
    """One headless chromium, one page, the DevTools protocol over its
    websocket. Cockpit's pages live in iframes of the shell, on the same
    origin: scripts reach them through contentWindow."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="nfbox-chromium.")
        # --no-sandbox: root runs it (the test's namespace), and chromium's
        # sandbox refuses root.
        self.proc = subprocess.Popen(
            ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-dev-shm-usage", "--user-data-dir=" + self.dir, "--remote-debugging-port=0",
             "--remote-allow-origins=*", "--window-size=1280,860", "--lang=en-US", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, "chromium.log"), "w"))
        port = None
        for _ in range(300):
            try:
                with open(os.path.join(self.dir, "DevToolsActivePort")) as f:
                    port = int(f.readline())
                break
            except (OSError, ValueError):
                time.sleep(0.1)
        if not port:
            raise RuntimeError("chromium did not open its DevTools port")
        targets = json.load(urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port, timeout=10))
        page = [t for t in targets if t["type"] == "page"][0]
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=60, suppress_origin=True)
        self.seq = 0
        self.send("Page.enable")
        self.send("Runtime.enable")
        self.send("Emulation.setDeviceMetricsOverride", width=1280, height=860, deviceScaleFactor=1, mobile=False)
        self.console = []

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def send(self, method, **params):
        self.seq += 1
        me = self.seq
        self.ws.send(json.dumps({"id": me, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == me:
                if "error" in msg:
                    raise RuntimeError("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})
            if msg.get("method") == "Runtime.exceptionThrown":
                d = msg["params"]["exceptionDetails"]
                self.console.append("exception: " + d.get("exception", {}).get("description", d.get("text", "")))

    def js(self, expr):
        """The value of EXPR (a promise is awaited), evaluated in the top
        document; F is the nfbox frame's window there, D its document, V(SEL)
        whether D's element SEL is shown (laid out: not hidden, nor in
        something hidden)."""
        wrapped = ("(async () => { const W = window; "
                   "const fr = document.querySelector('iframe[name$=\"/nfbox\"]'); "
                   "const F = fr ? fr.contentWindow : null; const D = F ? F.document : null; "
                   "const V = (s) => { const e = D && D.querySelector(s); return !!e && e.getClientRects().length > 0; }; "
                   "return (%s); })()" % expr)
        r = self.send("Runtime.evaluate", expression=wrapped, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise JSError(d.get("exception", {}).get("description", d.get("text", "")))
        return r["result"].get("value")

    def wait(self, expr, seconds=15, step=0.2):
        """EXPR's value once it is truthy; None (never raises) if it is not
        within SECONDS."""
        end = time.time() + seconds
        while True:
            try:
                # (an element is truthy here, but {} once returned by value)
                v = self.js("((v) => v instanceof W.Node || (F && v instanceof F.Node) ? true : v)(%s)" % expr)
            except JSError:
                v = None
            if v:
                return v
            if time.time() > end:
                return None
            time.sleep(step)

    def navigate(self, url):
        self.send("Page.navigate", url=url)

    def type_text(self, selector, text, frame=False):
        """Focus the field and type TEXT as keystrokes would."""
        doc = "D" if frame else "document"
        self.js("(%s.querySelector(%s).focus(), %s.querySelector(%s).select && %s.querySelector(%s).select(), true)"
                % (doc, json.dumps(selector), doc, json.dumps(selector), doc, json.dumps(selector)))
        self.send("Input.insertText", text=text)

    def shot(self, name):
        data = self.send("Page.captureScreenshot", format="png")["data"]
        path = os.path.join(E["COCKPIT_SHOTS"], name + ".png")
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path


class JSError(Exception):
    pass


# ---- the machine around the page ----

def run(*cmd, timeout=30):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def in_ct(*cmd):
    """A command in the container (its namespaces)."""
    return run("nsenter", "-t", E["COCKPIT_LEADER"], "-a", *cmd)


def daemon_status():
    r = in_ct("nfbox", "status", "--json")
    return json.loads(r.stdout) if r.returncode == 0 else None


def blast(port, count=20, src=None):
    """COUNT datagrams from the client namespace to the appliance's PORT."""
    cmd = ["ip", "netns", "exec", E["COCKPIT_NS_C"], E["COCKPIT_NET"], "udp-blast", E["COCKPIT_A4"], str(port), str(count)]
    if src:
        cmd.append(src)
    return run(*cmd)


def reaches(port, src):
    """Whether datagrams from SRC (in the client namespace) reach a socket
    on PORT of the appliance: "pass" or "drop"."""
    recv = subprocess.Popen(["ip", "netns", "exec", E["COCKPIT_NS_A"], E["COCKPIT_NET"], "udp-first", "4", str(port)],
                            stdout=subprocess.PIPE, text=True)
    assert "listening" in recv.stdout.readline()
    for _ in range(3):
        blast(port, 3, src)
        time.sleep(0.3)
    recv.terminate()
    out = recv.communicate(timeout=10)[0]
    got = [int(l.split()[2]) for l in out.splitlines() if l.startswith("got")]
    return "pass" if got and got[0] > 0 else "drop"


# ---- the page ----

def login(b, user):
    b.navigate("http://127.0.0.1:9090/")
    form = ("document.readyState === 'complete' && document.querySelector('#login-user-input') && "
            "document.querySelector('#login-user-input').offsetParent !== null")
    if not b.wait(form, 30):
        fail("login-" + user, "no login form at http://127.0.0.1:9090/: " + str(b.js("document.title")))
        return False
    # (login.js sets the form up after the page loads: typed text may be lost)
    for _ in range(20):
        b.type_text("#login-user-input", user)
        b.type_text("#login-password-input", E["COCKPIT_PASS"])
        if b.js("document.querySelector('#login-user-input').value === %s && "
                "document.querySelector('#login-password-input').value === %s" % (json.dumps(user), json.dumps(E["COCKPIT_PASS"]))):
            break
        time.sleep(0.3)
    b.js("document.querySelector('#login-button').click()")
    # the shell, then the nfbox page in its frame
    if not b.wait("location.pathname !== '/' && document.querySelector('iframe')", 30):
        fail("login-" + user, "no shell after logging in: " +
             str(b.js("(document.querySelector('#login-error-message') || {}).textContent || document.title")))
        return False
    b.navigate("http://127.0.0.1:9090/nfbox")
    if not b.wait("D && D.readyState === 'complete' && D.querySelector('#tabs')", 30):
        fail("login-" + user, "the nfbox page did not load: " + str(b.js("D ? D.body.innerText : 'no nfbox frame'")))
        return False
    ok("login-" + user)
    return True


def fact(b, name):
    """The overview's value of NAME (the dd after its dt)."""
    return b.js("(() => { for (const dt of D.querySelectorAll('#ov-facts dt')) if (dt.textContent === %s) "
                "return dt.nextElementSibling.textContent; return null; })()" % json.dumps(name))


def tab(b, name):
    b.js("D.querySelector('#tabs button[data-tab=%s]').click()" % json.dumps(name))
    return b.wait("V('section#%s')" % name, 5)


def page_error(b):
    return b.js("(() => { const e = D.querySelector('#error'); return e && !e.hidden ? e.textContent : ''; })()") or ""


def admin_access(b):
    """The operator turns on administrative access in Cockpit's shell (the
    "Limited access" button, then the password), as Cockpit asks for it."""
    name = "admin-access"
    btn = b.wait("[...document.querySelectorAll('button')].find((x) => /limited access/i.test(x.textContent)) ? true : false", 15)
    if not btn:
        fail(name, "no 'Limited access' button in the shell")
        return False
    b.js("[...document.querySelectorAll('button')].find((x) => /limited access/i.test(x.textContent)).click()")
    # the dialog: a password field (sudo's prompt), or first a button to go on
    for _ in range(3):
        got = b.wait("document.querySelector('[role=dialog] input[type=password]') ? 'pw' : "
                     "([...document.querySelectorAll('[role=dialog] button')]"
                     ".find((x) => /authenticate|turn on|continue/i.test(x.textContent)) ? 'button' : '')", 15)
        if got == "pw":
            break
        if got == "button":
            b.js("[...document.querySelectorAll('[role=dialog] button')]"
                 ".find((x) => /authenticate|turn on|continue/i.test(x.textContent)).click()")
            time.sleep(0.5)
    else:
        fail(name, "no password prompt: " + str(b.js("(document.querySelector('[role=dialog]') || {}).innerText")))
        return False
    b.type_text("[role=dialog] input[type=password]", E["COCKPIT_PASS"])
    b.js("[...document.querySelectorAll('[role=dialog] button')]"
         ".find((x) => /authenticate/i.test(x.textContent)).click()")
    if not b.wait("!document.querySelector('[role=dialog]')", 20):
        fail(name, "the dialog stayed: " + str(b.js("document.querySelector('[role=dialog]').innerText")))
        return False
    # the page learns it and shows its controls
    if not b.wait("D && !D.body.classList.contains('readonly') && D.querySelector('#access').textContent === ''", 20):
        fail(name, "the nfbox page still says: " + str(b.js("D.querySelector('#access').textContent")))
        return False
    ok(name)
    return True


def rule_row(b, rule):
    """The Rules table's cells of RULE as shown, by column heading."""
    return b.js("(() => { const heads = [...D.querySelectorAll('#rules-table thead th')].map((h) => h.textContent); "
                "for (const tr of D.querySelectorAll('#rules-table tbody tr')) { "
                "  const c = [...tr.cells].map((td) => td.textContent); "
                "  if (c[heads.indexOf('rule')] === %s) return Object.fromEntries(heads.map((h, i) => [h, c[i]])); } "
                "return null; })()" % json.dumps(rule))


def count(text):
    try:
        return int(text.replace(",", "").replace("\u202f", "").replace("\u00a0", "").replace(".", ""))
    except (AttributeError, ValueError):
        return None


def rules_counter(b):
    name = "rules-counter-moves"
    tab(b, "rules")
    if not b.wait("D.querySelectorAll('#rules-table tbody tr').length", 10):
        fail(name, "the Rules page shows no rule: " + page_error(b))
        return
    before = rule_row(b, "probe")
    if not before or count(before.get("packets")) is None:
        fail(name, "no row with a packet count for rule probe: %s" % before)
        return
    n0 = count(before["packets"])
    moved = None
    end = time.time() + 15
    while time.time() < end and not moved:
        blast(7000, 25)
        time.sleep(0.5)
        r = rule_row(b, "probe")
        if r and count(r.get("packets")) is not None and count(r["packets"]) >= n0 + 25:
            moved = r
    if not moved:
        fail(name, "rule probe's packets stayed at %s while traffic flowed: %s %s" % (n0, rule_row(b, "probe"), page_error(b)))
        return
    ok(name)
    # the rate of now, and a last hit just now, while it flows
    rate = None
    end = time.time() + 8
    while time.time() < end and rate is None:
        blast(7000, 25)
        time.sleep(0.6)
        r = rule_row(b, "probe")
        try:
            if r and float(r["rate now"].rstrip("/s")) > 0 and r["last hit"].endswith("s ago"):
                rate = r
        except ValueError:
            pass
    if rate:
        ok("rules-rate-and-last-hit")
    else:
        fail("rules-rate-and-last-hit", "no rate above 0 and a last hit seconds ago: %s" % rule_row(b, "probe"))
    b.shot("rules")


def set_entry(b, set_name, prefix):
    """The Sets page's row of PREFIX in SET_NAME's table, as shown."""
    return b.js("(() => { for (const h of D.querySelectorAll('#sets-list h2')) { "
                "  if (!h.textContent.startsWith('set ' + %s + ' ')) continue; "
                "  let t = h.nextElementSibling; while (t && t.tagName !== 'TABLE') t = t.nextElementSibling; "
                "  if (!t) return null; const heads = [...t.tHead.rows[0].cells].map((c) => c.textContent); "
                "  for (const tr of t.tBodies[0].rows) { const c = [...tr.cells].map((td) => td.textContent); "
                "    if (c[0] === %s) return Object.fromEntries(heads.map((x, i) => [x, c[i]])); } } "
                "return null; })()" % (json.dumps(set_name), json.dumps(prefix)))


def ban(b):
    name = "ban-address"
    banned = E["COCKPIT_BANNED"]
    if reaches(7000, banned) != "pass":
        fail(name, "%s's traffic to udp/7000 does not pass before the ban: the check could not tell" % banned)
        return
    tab(b, "sets")
    if not b.wait("[...D.querySelectorAll('#set-add-name option')].some((o) => o.value === 'banned')", 10):
        fail(name, "the Sets page offers no set 'banned': " + page_error(b))
        return
    b.js("(D.querySelector('#set-add-name').value = 'banned', true)")
    b.type_text("#set-add-prefix", banned, frame=True)
    b.type_text("#set-add-timeout", "10m", frame=True)
    b.js("D.querySelector('#set-add button[type=submit]').click()")
    row = b.wait("(%s)" % set_entry_js(banned), 10)
    if not row:
        fail(name, "%s not shown in set banned after Add: %s" % (banned, page_error(b)))
        return
    left = row.get("expires", "")
    if not (left.startswith("in ") and 500 < (count(left[3:].rstrip(" s")) or 0) <= 600):
        fail(name, "set banned shows %s with expiry %r, not in about 10 minutes" % (banned, left))
        return
    ok(name)
    b.shot("sets")
    # the events page follows the log from now on: the drops that follow
    tab(b, "events")
    b.wait("D.querySelector('#ev-state').textContent.startsWith('following')", 5)
    time.sleep(0.5)
    got = reaches(7000, banned)
    if got == "drop" and reaches(7000, E["COCKPIT_C4"]) == "pass":
        ok("ban-drops-traffic")
    else:
        fail("ban-drops-traffic", "%s's traffic after the ban: %s" % (banned, got))


def set_entry_js(prefix):
    return ("(() => { for (const tr of D.querySelectorAll('#sets-list tbody tr')) { "
            "const c = [...tr.cells].map((td) => td.textContent); if (c[0] === %s) "
            "return { prefix: c[0], by: c[1], added: c[2], expires: c[3] }; } return null; })()" % json.dumps(prefix))


def events(b):
    name = "event-read"
    banned = E["COCKPIT_BANNED"]
    tab(b, "events")
    b.type_text("#ev-addr", banned, frame=True)
    row = b.wait("(() => { const heads = [...D.querySelectorAll('#ev-table thead th')].map((h) => h.textContent); "
                 "for (const tr of D.querySelectorAll('#ev-table tbody tr')) { const c = [...tr.cells].map((td) => td.textContent); "
                 "const r = Object.fromEntries(heads.map((h, i) => [h, c[i]])); "
                 "if (r.rule === 'drop-banned' && r.action === 'drop') return r; } return null; })()", 10)
    if not row:
        fail(name, "no drop-banned event shown for %s: %s %s" % (banned, b.js("D.querySelector('#ev-table tbody').innerText"), b.js("D.querySelector('#ev-state').textContent")))
        return
    if not row["source"].startswith(banned) or not row["destination"].startswith(E["COCKPIT_A4"] + ":7000") or row["in"] != "lan0":
        fail(name, "the event shows %s" % row)
        return
    # the filter hides what it does not match
    b.type_text("#ev-addr", "192.0.2.99", frame=True)
    if not b.wait("D.querySelectorAll('#ev-table tbody tr').length === 0", 5):
        fail("event-filter", "the address filter 192.0.2.99 still shows %s" % b.js("D.querySelector('#ev-table tbody').innerText"))
    else:
        ok("event-filter")
    b.type_text("#ev-addr", banned, frame=True)
    ok(name)
    b.shot("events")


def policy_text(b):
    return b.js("D.querySelector('#pol-text').value")


def set_policy_text(b, text):
    b.js("(() => { const t = D.querySelector('#pol-text'); t.value = %s; t.dispatchEvent(new F.Event('input')); return true; })()"
         % json.dumps(text))


def validate_broken(b, good):
    name = "validate-error-at-line"
    line = int(E["COCKPIT_PROBE_LINE"])
    lines = good.split("\n")
    if "service: udp/7000" not in lines[line - 1]:
        fail(name, "line %d of the policy is not rule probe: %r" % (line, lines[line - 1]))
        return
    col = lines[line - 1].index("service:") + 1
    lines[line - 1] = lines[line - 1].replace("service:", "sevice:")
    set_policy_text(b, "\n".join(lines))
    b.js("D.querySelector('#pol-validate').click()")
    items = b.wait("D.querySelectorAll('#pol-diags li').length && [...D.querySelectorAll('#pol-diags li')].map((l) => l.textContent)", 15)
    want = "line %d, column %d: error: unknown key 'sevice'" % (line, col)
    if not items or not any(i.startswith(want) for i in items):
        fail(name, "want %r among the diagnostics, got %s %s" % (want, items, page_error(b)))
        return
    marked = b.js("[...D.querySelectorAll('#pol-lines .bad')].map((s) => s.textContent)")
    if str(line) not in (marked or []):
        fail(name, "the line numbers mark %s, not %d" % (marked, line))
        return
    # a click on the diagnostic puts the cursor on the place
    b.js("[...D.querySelectorAll('#pol-diags li')].find((l) => l.textContent.startsWith(%s)).click()" % json.dumps(want))
    at = b.js("(() => { const t = D.querySelector('#pol-text'); return t.value.slice(t.selectionStart, t.selectionStart + 6); })()")
    if at != "sevice":
        fail(name, "a click on the diagnostic selects %r, not the key" % at)
        return
    ok(name)
    b.shot("policy-validate")


def apply_confirm(b, good):
    name = "apply-confirm"
    st0 = daemon_status()
    text = good.rstrip("\n") + "\n  - { name: probe2, hook: input, in: lan, service: udp/7001, action: accept }\n"
    set_policy_text(b, text)
    b.type_text("#pol-confirm", "20s", frame=True)
    applied = time.time()
    b.js("D.querySelector('#pol-apply').click()")
    box = b.wait("V('#pol-pending') && D.querySelector('#pol-countdown').textContent", 20)
    if not box or "rolls back by itself in" not in box:
        fail(name, "no countdown after Apply: %r %s %s" % (box, page_error(b), b.js("D.querySelector('#pol-out').textContent")))
        return
    st = daemon_status()
    if not st or not st.get("pending") or st["generation"] <= st0["generation"]:
        fail(name, "the daemon has no change waiting for confirmation: %s" % (st and st.get("pending")))
        return
    if reaches(7001, E["COCKPIT_C4"]) != "pass":
        fail(name, "the applied rule probe2 is not enforced while it waits")
        return
    b.shot("policy-pending")
    b.js("D.querySelector('#pol-keep').click()")
    if not b.wait("!V('#pol-pending') && /^Confirmed/.test(D.querySelector('#pol-out').textContent)", 20):
        fail(name, "Confirm did not end the countdown: %s %s" % (b.js("D.querySelector('#pol-out').textContent"), page_error(b)))
        return
    st = daemon_status()
    on_disk = open(os.path.join(E["COCKPIT_ROOT"], "etc/nfbox/policy.yaml")).read()
    if not st or st.get("pending") or "probe2" not in on_disk:
        fail(name, "after Confirm: pending %s, probe2 %s in /etc/nfbox/policy.yaml" %
             (st and st.get("pending"), "is" if "probe2" in on_disk else "is not"))
        return
    if st.get("policy") != "/etc/nfbox/policy.yaml" or st.get("on_disk") != "same":
        fail(name, "after Confirm the daemon enforces %s (%s), not the configured file" % (st.get("policy"), st.get("on_disk")))
        return
    tab(b, "rules")
    if not b.wait("(%s)" % ("[...D.querySelectorAll('#rules-table tbody tr')].some((tr) => tr.cells[1].textContent === 'probe2')"), 10):
        fail(name, "the Rules page does not list probe2 after Confirm")
        return
    # past the deadline: a confirmed change stays
    time.sleep(max(0, applied + 22 - time.time()))
    if reaches(7001, E["COCKPIT_C4"]) != "pass" or (daemon_status() or {}).get("policy") != "/etc/nfbox/policy.yaml":
        fail(name, "probe2 is not enforced past the deadline after Confirm")
        return
    ok(name)


def apply_rollback(b, good):
    name = "apply-rollback"
    tab(b, "policy")
    st0 = daemon_status()
    text = policy_text(b).rstrip("\n") + "\n  - { name: probe3, hook: input, in: lan, service: udp/7002, action: accept }\n"
    set_policy_text(b, text)
    b.type_text("#pol-confirm", "5s", frame=True)
    b.js("D.querySelector('#pol-apply').click()")
    box = b.wait("V('#pol-pending') && D.querySelector('#pol-countdown').textContent", 15)
    if not box:
        fail(name, "no countdown after Apply: %s" % page_error(b))
        return
    # nobody confirms: the daemon rolls back by itself, and the page says so
    said = b.wait("!V('#pol-pending') && D.querySelector('#pol-out').textContent", 25)
    st = daemon_status()
    if not said or "rolled back" not in said:
        fail(name, "the page does not say the change rolled back: %r (daemon: pending %s)" % (said, st and st.get("pending")))
        return
    if not st or st.get("pending") or reaches(7002, E["COCKPIT_C4"]) != "drop":
        fail(name, "after the rollback: pending %s, probe3 still enforced" % (st and st.get("pending")))
        return
    tab(b, "rules")
    time.sleep(1.5)
    names = b.js("[...D.querySelectorAll('#rules-table tbody tr')].map((tr) => tr.cells[1].textContent)")
    if "probe3" in names or "probe2" not in names:
        fail(name, "the Rules page after the rollback lists %s" % names)
        return
    ok(name)


def rollback_now(b):
    """Apply with a long confirmation time, then "Roll back now": the daemon's
    nfbox rollback, not the deadline."""
    name = "rollback-now"
    tab(b, "policy")
    text = policy_text(b).rstrip("\n") + "\n  - { name: probe4, hook: input, in: lan, service: udp/7003, action: accept }\n"
    set_policy_text(b, text)
    b.type_text("#pol-confirm", "5m", frame=True)
    b.js("D.querySelector('#pol-apply').click()")
    if not b.wait("V('#pol-pending') && D.querySelector('#pol-countdown').textContent", 15):
        fail(name, "no countdown after Apply: %s" % page_error(b))
        return
    if reaches(7003, E["COCKPIT_C4"]) != "pass":
        fail(name, "the applied rule probe4 is not enforced while it waits")
        return
    started = time.time()
    b.js("D.querySelector('#pol-rollback').click()")
    said = b.wait("!V('#pol-pending') && D.querySelector('#pol-out').textContent", 15)
    st = daemon_status()
    if not said or "rolled back" not in said or time.time() - started > 15:
        fail(name, "Roll back now: the page says %r (daemon: pending %s)" % (said, st and st.get("pending")))
        return
    if not st or st.get("pending") or reaches(7003, E["COCKPIT_C4"]) != "drop":
        fail(name, "after Roll back now: pending %s, probe4 %s" % (st and st.get("pending"), reaches(7003, E["COCKPIT_C4"])))
        return
    ok(name)


def policy(b):
    tab(b, "policy")
    good = b.wait("D.querySelector('#pol-text').value", 10)
    if not good or "name: probe," not in good:
        fail("policy-loaded", "the editor does not hold /etc/nfbox/policy.yaml: %r %s" % (good, page_error(b)))
        return
    ok("policy-loaded")
    validate_broken(b, good)
    apply_confirm(b, good)
    apply_rollback(b, good)
    rollback_now(b)


def trace(b):
    name = "trace-decides"
    tab(b, "trace")
    for sel, v in (("#tr-in", "lan0"), ("#tr-from", E["COCKPIT_BANNED"]), ("#tr-to", E["COCKPIT_A4"]),
                   ("#tr-proto", "udp"), ("#tr-port", "7000")):
        b.type_text(sel, v, frame=True)
    b.js("D.querySelector('#tr-form button[type=submit]').click()")
    v = b.wait("D.querySelector('#tr-verdict') && D.querySelector('#tr-verdict').textContent", 15)
    if v != "drop by drop-banned on input":
        fail(name, "the verdict shown: %r %s" % (v, page_error(b)))
        return
    rows = b.js("[...D.querySelectorAll('#tr-result tbody tr')].map((tr) => [...tr.cells].map((c) => c.textContent))")
    want = {"loopback": "no", "drop-banned": "matches"}
    got = {r[1]: r[0] for r in rows or []}
    if any(got.get(k) != w for k, w in want.items()) or "probe" in got:
        fail(name, "the rules tried: %s" % rows)
        return
    entry = [r for r in rows if r[1] == "drop-banned"][0]
    if E["COCKPIT_BANNED"] not in entry[4]:
        fail(name, "the deciding rule does not name the set's entry: %s" % entry)
        return
    ok(name)
    b.shot("trace")
    # the same packet from an address not banned: the rule probe decides
    b.type_text("#tr-from", E["COCKPIT_C4"], frame=True)
    b.js("D.querySelector('#tr-form button[type=submit]').click()")
    v = b.wait("D.querySelector('#tr-verdict').textContent === 'accept by probe on input'", 10)
    if v:
        ok("trace-other-source")
    else:
        fail("trace-other-source", "the verdict shown: %r" % b.js("D.querySelector('#tr-verdict').textContent"))
    trace_live(b)


def trace_live(b):
    """The Live section: one real datagram traced through the engine,
    named by the rule that decided it, with that rule's counter."""
    name = "trace-live"
    for sel, v in (("#lt-from", E["COCKPIT_C4"]), ("#lt-proto", "udp"), ("#lt-port", "7000"), ("#lt-count", "1"),
                   ("#lt-timeout", "30")):
        b.js("D.querySelector('%s').value = ''" % sel)
        b.type_text(sel, v, frame=True)
    b.js("D.querySelector('#lt-start').click()")
    if not b.wait("D.querySelector('#lt-state').textContent.startsWith('tracing')", 10):
        fail(name, "the trace did not start: %r %s" % (b.js("D.querySelector('#lt-state').textContent"), page_error(b)))
        return
    for _ in range(20):  # the trace is in place a moment after the page says so
        blast(7000, 1, E["COCKPIT_C4"])
        if b.wait("D.querySelector('#lt-table tbody tr')", 0.5):
            break
    rows = b.js("[...D.querySelectorAll('#lt-table tbody tr')].map((tr) => [...tr.cells].map((c) => c.textContent))")
    said = b.wait("D.querySelector('#lt-state').textContent.startsWith('1 packet traced')", 10)
    if not rows or len(rows) != 1 or rows[0][8] != "probe" or rows[0][9] != "accept" or "packets" not in rows[0][10] \
            or not said:
        fail(name, "the rows: %s; the state: %r" % (rows, b.js("D.querySelector('#lt-state').textContent")))
        return
    ok(name)
    b.shot("trace-live")


def overview(b, name="overview"):
    tab(b, "overview")
    b.wait("D.querySelector('#ov-facts').children.length", 10)
    st = daemon_status()
    gen = fact(b, "generation")
    be = fact(b, "backend")
    pf = fact(b, "policy file")
    if st and gen == str(st["generation"]) and be == st["backend"] and pf == st["policy"]:
        ok(name)
    else:
        fail(name, "the overview shows generation %r, backend %r, policy %r; the daemon: %s" %
             (gen, be, pf, st and (st["generation"], st["backend"], st["policy"])))
    b.shot(name)


def operator():
    b = Browser()
    try:
        if not login(b, "admin"):
            return
        if not admin_access(b):
            return
        overview(b)
        rules_counter(b)
        ban(b)
        events(b)
        policy(b)
        trace(b)
    finally:
        if b.console:
            print("# page exceptions: " + "; ".join(b.console[:5]), flush=True)
        b.close()


def viewer():
    b = Browser()
    try:
        if not login(b, "viewer"):
            return
        name = "viewer-read-only"
        note = b.js("D.querySelector('#access').textContent")
        hidden = b.js("[...D.querySelectorAll('.write')].every((e) => e.offsetParent === null)")
        if b.js("D.body.classList.contains('readonly')") and note.startswith("Read only") and hidden:
            ok(name)
        else:
            fail(name, "access note %r, controls hidden: %s" % (note, hidden))
        overview(b, "viewer-overview")
        tab(b, "rules")
        if b.wait("(%s)" % "[...D.querySelectorAll('#rules-table tbody tr')].some((tr) => tr.cells[1].textContent === 'probe')", 10):
            ok("viewer-rules")
        else:
            fail("viewer-rules", "the Rules page shows no rule probe: " + page_error(b))
        tab(b, "sets")
        if b.wait("(%s)" % set_entry_js(E["COCKPIT_BANNED"]), 10):
            ok("viewer-sets")
        else:
            fail("viewer-sets", "the Sets page does not show the ban: " + page_error(b))
        b.shot("viewer-sets")
    finally:
        b.close()


def main():
    {"operator": operator, "viewer": viewer}[sys.argv[1]]()
    return 1 if FAILED else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:
        # (Python's own status for this is 1, the one for failed checks)
        import traceback
        traceback.print_exc()
        sys.exit(2)
