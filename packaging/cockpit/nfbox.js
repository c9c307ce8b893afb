// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// nfbox in Cockpit: plain JavaScript, no build step. Every fact comes from
// `nfbox ... --json` run with cockpit.spawn; nothing else talks to the
// daemon. Reading runs with superuser "try" (a member of the daemon's
// --socket-group reads without it); every change asks for "require".
"use strict";

const $ = (id) => document.getElementById(id);
const CANDIDATE = ".cockpit-candidate.yaml"; // beside the configured policy file
let admin = false;
let status = null;

// ---- talking to nfbox ----

function nfbox(args, write) {
    return cockpit.spawn(["nfbox", ...args], { superuser: write ? "require" : "try", err: "message" });
}

// nfbox's output also when it exits with one of the statuses in ok (validate
// prints its document and exits 3 for an invalid policy, diff exits 1 for a
// change): a shell turns those into 0, so cockpit.spawn keeps the output.
function nfboxAllowing(ok, args, write, merge) {
    const sh = 'nfbox "$@"' + (merge ? " 2>&1" : "") + '; s=$?; case " ' + ok.join(" ") + ' " in *" $s "*) exit 0 ;; esac; exit $s';
    return cockpit.spawn(["sh", "-c", sh, "nfbox", ...args], { superuser: write ? "require" : "try", err: "message" });
}

function nfboxJSON(args, write) {
    return nfbox(args, write).then(JSON.parse);
}

function showError(ex) {
    const e = $("error");
    e.textContent = ex ? String(ex.message || ex) : "";
    e.hidden = !ex;
}

function el(tag, props, ...kids) {
    const n = document.createElement(tag);
    Object.assign(n, props || {});
    for (const k of kids)
        n.append(k instanceof Node ? k : document.createTextNode(k === null || k === undefined ? "" : String(k)));
    return n;
}

function row(tbody, cells) {
    const tr = el("tr");
    for (const c of cells)
        tr.append(c instanceof Node && c.tagName === "TD" ? c : el("td", {}, c));
    tbody.append(tr);
    return tr;
}

function num(v) {
    return el("td", { className: "num" }, v === null || v === undefined ? "" : v.toLocaleString());
}

function ago(ts) {
    if (ts === null || ts === undefined)
        return "never";
    const s = Math.max(0, Math.round(Date.now() / 1000 - ts));
    if (s < 120)
        return s + " s ago";
    if (s < 7200)
        return Math.round(s / 60) + " min ago";
    if (s < 172800)
        return Math.round(s / 3600) + " h ago";
    return Math.round(s / 86400) + " days ago";
}

function when(ts) {
    return ts ? new Date(ts * 1000).toISOString().replace(/\.\d+Z$/, "Z") : "";
}

function dirname(p) {
    return p.replace(/\/[^/]*$/, "") || "/";
}

// The policy file the service is configured with: what a plain reload
// reads (status' configured_policy), not the page's candidate after an apply.
function configuredPolicy() {
    if (!status)
        return null;
    return status.configured_policy || status.policy || null;
}

// ---- tabs ----

const refreshers = {};
let current = "overview";

function showTab(name) {
    current = name;
    for (const b of document.querySelectorAll("#tabs button"))
        b.classList.toggle("on", b.dataset.tab === name);
    for (const s of document.querySelectorAll("body > section"))
        s.hidden = s.id !== name;
    if (refreshers[name])
        refreshers[name]();
}

// ---- overview ----

function fact(dl, name, value) {
    dl.append(el("dt", {}, name), el("dd", {}, value === null || value === undefined || value === "" ? "-" : value));
}

function refreshOverview() {
    return Promise.all([nfboxJSON(["status", "--json"]), nfboxJSON(["stats", "--json"])]).then(([st, stats]) => {
        status = st;
        const dl = $("ov-facts");
        dl.replaceChildren();
        fact(dl, "generation", st.generation);
        fact(dl, "backend", st.backend);
        fact(dl, "policy file", st.policy);
        fact(dl, "fingerprint", st.fingerprint);
        fact(dl, "on disk", st.on_disk);
        fact(dl, "loaded", when(st.loaded_at) + " (" + ago(st.loaded_at) + ")");
        fact(dl, "reloads", st.reloads_ok + " ok, " + st.reloads_failed + " failed");
        fact(dl, "waiting for confirmation", st.pending ? st.pending.seconds_left + " s left" : "no");
        // the keys are docs/report.md's
        fact(dl, "HA", st.ha ? st.ha.role + (st.ha.peer ? ", peer " + st.ha.peer : "") : "none");
        fact(dl, "fleet", st.fleet ? (st.fleet.revision ? "revision " + st.fleet.revision : "no revision yet") +
             (st.fleet.connected ? ", etcd reached" : ", etcd NOT reached") +
             (st.fleet.local_change ? ", a local change is in force" : "") +
             (st.fleet.candidate ? ", candidate " + st.fleet.candidate + " " + st.fleet.candidate_state : "") : "none");
        fact(dl, "rules", st.rules);
        fact(dl, "version", st.version);
        const ul = $("ov-warnings");
        ul.replaceChildren();
        const warn = (t) => ul.append(el("li", { className: "warn" }, t));
        for (const w of (st.forwarding && st.forwarding.warnings) || [])
            warn(w.message + (w.fix ? " (" + w.fix + ")" : ""));
        for (const f of st.feeds || [])
            if (f.warning)
                warn("set " + f.set + " (" + f.kind + "): " + f.warning);
        for (const m of st.missing_interfaces || [])
            warn("interface " + m + " does not exist");
        if (st.on_disk === "changed")
            warn("the policy file has changed since it was loaded");
        if (!ul.children.length)
            ul.append(el("li", { className: "note" }, "none"));
        const tb = $("ov-drops").tBodies[0];
        tb.replaceChildren();
        for (const [k, v] of Object.entries(stats.drops || {}))
            row(tb, [k, num(v)]);
        showError(null);
    }).catch(showError);
}

// ---- rules: once a second ----

let lastStats = null;

function refreshRules() {
    return Promise.all([nfboxJSON(["stats", "--json"]), status ? Promise.resolve(status) : nfboxJSON(["status", "--json"])])
            .then(([stats, st]) => {
                status = st;
                const now = Date.now() / 1000;
                const sched = {};
                for (const s of st.schedules || [])
                    sched[s.rule] = s;
                const before = {};
                if (lastStats)
                    for (const r of lastStats.stats.rules)
                        before[r.hook + " " + r.rule] = r;
                const tb = $("rules-table").tBodies[0];
                tb.replaceChildren();
                for (const r of stats.rules) {
                    const b = before[r.hook + " " + r.rule];
                    const rate = b ? (r.packets - b.packets) / Math.max(0.001, now - lastStats.at) : null;
                    const s = sched[r.rule];
                    const tr = row(tb, [r.hook, r.rule, r.action, num(r.packets), num(r.bytes),
                        rate === null ? "" : rate.toFixed(1) + "/s", ago(r.last_hit),
                        s ? (s.in_force ? "yes" : "no") + (s.next_change ? " until " + when(s.next_change) : "") : "yes",
                        r.packets ? "" : when(r.in_force_since)]);
                    tr.dataset.rule = r.rule;
                    tr.dataset.hook = r.hook;
                    tr.dataset.packets = r.packets;
                }
                lastStats = { stats, at: now };
                showError(null);
            }).catch(showError);
}

// ---- sets ----

function refreshSets() {
    return nfboxJSON(["set", "list", "--json"]).then((sets) => {
        const list = $("sets-list");
        const sel = $("set-add-name");
        const chosen = sel.value;
        sel.replaceChildren(...sets.map((s) => el("option", {}, s.set)));
        if (chosen)
            sel.value = chosen;
        const feeds = {};
        for (const f of (status && status.feeds) || [])
            feeds[f.set] = f;
        return Promise.all(sets.map((s) => nfboxJSON(["set", "list", s.set, "--json"]))).then((full) => {
            list.replaceChildren();
            for (const s of full) {
                const f = feeds[s.set];
                list.append(el("h2", {}, "set " + s.set + " (" + s.entries + " entries)"));
                if (f)
                    list.append(el("p", { className: f.warning ? "warn" : "note" },
                                   "fed from " + f.kind + " " + (f.source || "") + ", loaded " + ago(f.loaded) +
                                   (f.warning ? ": " + f.warning : "")));
                const t = el("table", {}, el("thead", {}, el("tr", {}, ...["prefix", "added by", "added", "expires"].map((h) => el("th", {}, h)), el("th"))));
                const tb = el("tbody");
                t.append(tb);
                for (const e of s.elements) {
                    const del = el("button", { className: "link write" }, "Delete");
                    del.addEventListener("click", () => nfbox(["set", "del", s.set, e.prefix], true).then(refreshSets, showError));
                    row(tb, [e.prefix, e.by, when(e.added), e.seconds_left === null ? "never" : "in " + e.seconds_left + " s", el("td", {}, del)]);
                }
                list.append(t);
            }
            showError(null);
        });
    }).catch(showError);
}

function addToSet(ev) {
    ev.preventDefault();
    const args = ["set", "add", $("set-add-name").value, $("set-add-prefix").value.trim()];
    if ($("set-add-timeout").value.trim())
        args.push("--timeout", $("set-add-timeout").value.trim());
    nfbox(args, true).then(() => {
        $("set-add-prefix").value = "";
        return refreshSets();
    }).catch(showError);
}

// ---- events: nfbox log, live ----

const events = [];
let logProc = null;

function eventShown(e) {
    const rule = $("ev-rule").value.trim();
    const addr = $("ev-addr").value.trim();
    const action = $("ev-action").value;
    return (!rule || e.rule === rule) && (!addr || e.src === addr || e.dst === addr) && (!action || e.action === action);
}

function drawEvents() {
    const tb = $("ev-table").tBodies[0];
    tb.replaceChildren();
    for (let i = events.length - 1, n = 0; i >= 0 && n < 200; i--) {
        const e = events[i];
        if (!eventShown(e))
            continue;
        n++;
        row(tb, [when(e.ts), e.hook, e.rule, e.action, e.proto, e.src + (e.sport ? ":" + e.sport : ""),
            e.dst + (e.dport && (e.proto === 6 || e.proto === 17) ? ":" + e.dport : ""), e.in, e.out]);
    }
}

// Each whole JSON line a process writes, parsed, to each; then done().
function streamJSON(proc, each, done) {
    let buf = "";
    proc.stream((data) => {
        buf += data;
        let nl;
        while ((nl = buf.indexOf("\n")) >= 0) {
            const line = buf.slice(0, nl);
            buf = buf.slice(nl + 1);
            try {
                each(JSON.parse(line));
            } catch (ex) {
                continue;
            }
        }
        done();
    });
}

function followEvents() {
    if (logProc)
        return;
    $("ev-state").textContent = "following nfbox log";
    logProc = nfbox(["log"]);
    streamJSON(logProc, (e) => {
        events.push(e);
        if (events.length > 2000)
            events.shift();
    }, drawEvents);
    logProc.catch((ex) => {
        $("ev-state").textContent = "nfbox log ended: " + (ex.message || ex);
    }).then(() => { logProc = null });
}

// ---- policy: edit, validate, diff, apply with confirm ----

let polFile = null;

function drawLines(bad) {
    const n = $("pol-text").value.split("\n").length;
    const pre = $("pol-lines");
    pre.replaceChildren();
    for (let i = 1; i <= n; i++)
        pre.append(bad && bad.has(i) ? el("span", { className: "bad" }, String(i)) : String(i), "\n");
}

function loadPolicy() {
    if (polFile)
        return Promise.resolve();
    return nfboxJSON(["status", "--json"]).then((st) => {
        status = st;
        polFile = configuredPolicy();
        $("pol-file").textContent = polFile;
        return cockpit.file(polFile, { superuser: "try" }).read();
    }).then((text) => {
        $("pol-text").value = text || "";
        drawLines();
    }).catch(showError);
}

// The editor's text in a file of its own: the policy as the daemon or
// validate would read it. Returns the path.
function scratch(write) {
    const path = write ? dirname(polFile) + "/" + CANDIDATE : null;
    const made = path ? Promise.resolve(path) : cockpit.spawn(["mktemp", "--suffix=.yaml"]).then((p) => p.trim());
    return made.then((p) => cockpit.file(p, write ? { superuser: "require" } : {}).replace($("pol-text").value).then(() => p));
}

function gotoLine(line, col) {
    const ta = $("pol-text");
    const lines = ta.value.split("\n");
    let at = 0;
    for (let i = 0; i < line - 1 && i < lines.length; i++)
        at += lines[i].length + 1;
    at += Math.max(0, (col || 1) - 1);
    ta.focus();
    ta.setSelectionRange(at, at + 1);
}

function validate() {
    $("pol-out").textContent = "";
    return scratch(false).then((tmp) => nfboxAllowing([3], ["validate", "--json", tmp]).finally(() => cockpit.spawn(["rm", "-f", tmp])))
            .then(JSON.parse)
            .then((doc) => {
                const ul = $("pol-diags");
                ul.replaceChildren();
                const bad = new Set();
                for (const f of doc.files)
                    for (const d of f.diagnostics) {
                        const where = d.line ? "line " + d.line + ", column " + d.column : "";
                        const li = el("li", { className: d.severity === "error" ? "error" : "warn" },
                                      where + (where ? ": " : "") + d.severity + ": " + d.message + (d.fix ? " (" + d.fix + ")" : ""));
                        li.dataset.line = d.line || "";
                        if (d.line) {
                            bad.add(d.line);
                            li.addEventListener("click", () => gotoLine(d.line, d.column));
                        }
                        ul.append(li);
                    }
                if (doc.valid && !ul.children.length)
                    ul.append(el("li", { className: "yes" }, "valid"));
                drawLines(bad);
                showError(null);
                return doc.valid;
            }).catch(showError);
}

function diff() {
    return scratch(false).then((tmp) => nfboxAllowing([1], ["diff", tmp], false, true).finally(() => cockpit.spawn(["rm", "-f", tmp])))
            .then((out) => {
        $("pol-out").textContent = out || "no change";
        showError(null);
    }).catch(showError);
}

function apply() {
    return validate().then((ok) => {
        if (!ok)
            return;
        return scratch(true).then((cand) => nfbox(["reload", "--policy", cand, "--confirm", $("pol-confirm").value], true))
                .then((out) => {
                    $("pol-out").textContent = out || "applied; waiting for confirmation";
                    return watchPending();
                });
    }).catch(showError);
}

let pendingTimer = null;
let pendingSeen = false; // a countdown shown, and not yet ended here
let confirming = false; // this page's Confirm under way

// The daemon's countdown (status pending), once a second while it lasts.
// A countdown that ends without this page's Confirm was rolled back by the
// daemon (its deadline, Roll back now, or another client): said so, with
// what is in force again.
function watchPending() {
    return nfboxJSON(["status", "--json"]).then((st) => {
        if (confirming)
            return;
        status = st;
        const box = $("pol-pending");
        box.hidden = !st.pending;
        clearTimeout(pendingTimer);
        if (st.pending) {
            pendingSeen = true;
            $("pol-countdown").textContent = "The change rolls back by itself in " + Math.max(0, st.pending.seconds_left) +
                " s unless it is confirmed.";
            pendingTimer = setTimeout(watchPending, 1000);
        } else if (pendingSeen) {
            pendingSeen = false;
            $("pol-out").textContent = "Not confirmed: the change was rolled back. In force: generation " + st.generation +
                ", " + st.policy + " (" + st.rules + " rules).";
        }
    }).catch(showError);
}

function confirmChange() {
    const cand = dirname(polFile) + "/" + CANDIDATE;
    confirming = true;
    clearTimeout(pendingTimer);
    return nfbox(["confirm"], true)
            // the confirmed text (the candidate file, whatever the editor
            // holds now) becomes the configured file, which a restart loads
            .then(() => cockpit.file(cand, { superuser: "require" }).read())
            .then((text) => {
                if (text === null)
                    throw new Error(cand + " is gone: the confirmed policy is in force, but not saved to " + polFile);
                return cockpit.file(polFile, { superuser: "require" }).replace(text);
            })
            .then(() => nfbox(["reload", "--policy", polFile], true))
            .then(() => cockpit.spawn(["rm", "-f", cand], { superuser: "require" }))
            .then(() => {
                $("pol-out").textContent = "Confirmed, and saved to " + polFile + ".";
                showError(null);
            })
            .catch(showError)
            .finally(() => {
                confirming = false;
                pendingSeen = false;
                return watchPending();
            });
}

// The daemon's own rollback, now (nfbox rollback): the last confirmed
// policy comes back, as at the deadline.
function rollbackNow() {
    return nfbox(["rollback"], true).then(() => {
        $("pol-out").textContent = "rolling back";
        return watchPending();
    }).catch(showError);
}

// ---- captures ----

function download(path) {
    cockpit.file(path, { binary: true, superuser: "try", max_read_size: 512 * 1024 * 1024 }).read().then((data) => {
        const url = URL.createObjectURL(new Blob([data], { type: "application/octet-stream" }));
        const a = el("a", { href: url, download: path.replace(/.*\//, "") });
        document.body.append(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(url), 10000);
    }).catch(showError);
}

function refreshCaptures() {
    return Promise.all([nfboxJSON(["status", "--json"]), nfboxJSON(["stats", "--json"])]).then(([st, stats]) => {
        status = st;
        const counters = {};
        for (const c of stats.captures || [])
            counters[c.name] = c;
        const tb = $("cap-table").tBodies[0];
        tb.replaceChildren();
        for (const c of st.captures || []) {
            const k = counters[c.name] || {};
            const text = Object.entries(k).filter(([n, v]) => typeof v === "number").map(([n, v]) => n + " " + v).join(", ");
            const b = el("button", { className: "link" }, "Download");
            b.addEventListener("click", () => download(c.file));
            row(tb, [c.name, c.interface, c.file, c.running ? "yes" : "no" + (c.error ? ": " + c.error : ""), text, el("td", {}, b)]);
        }
        if (!tb.children.length)
            row(tb, ["no capture in the policy"]);
        showError(null);
    }).catch(showError);
}

// ---- trace: what if ----

function trace(ev) {
    ev.preventDefault();
    const args = ["trace", "--json", "--from", $("tr-from").value.trim(), "--to", $("tr-to").value.trim(),
        "--proto", $("tr-proto").value.trim(), "--state", $("tr-state").value];
    if ($("tr-in").value.trim())
        args.push("--in", $("tr-in").value.trim());
    if ($("tr-out").value.trim())
        args.push("--out", $("tr-out").value.trim());
    if ($("tr-port").value.trim())
        args.push("--port", $("tr-port").value.trim());
    nfboxJSON(args).then((t) => {
        const out = $("tr-result");
        out.replaceChildren();
        const dl = el("dl", { className: "facts" });
        fact(dl, "policy", t.policy + (t.changed_on_disk ? " (changed on disk: the file is traced, not what runs)" : ""));
        fact(dl, "dynamic sets", t.sets_from ? "as the " + t.sets_from + " holds them" : "judged empty");
        fact(dl, "hooks met", t.hooks_met.join(", "));
        fact(dl, "early drop", t.early.rule ? "rule " + t.early.rule : t.early.possible ? "no early rule drops it" : "no early rule on this interface");
        fact(dl, "prerouting", t.dnat ? t.dnat.kind + ": " + t.dnat.text : "no translation");
        fact(dl, "postrouting", t.snat ? t.snat.kind + ": " + t.snat.text : "no translation");
        const verdict = el("strong", { id: "tr-verdict" }, (t.verdict || "not known") + (t.decided_by ? " by " + t.decided_by : "") + " on " + t.hook);
        fact(dl, "verdict", verdict);
        if (t.note)
            fact(dl, "note", t.note);
        out.append(dl);
        const tab = el("table", {}, el("thead", {}, el("tr", {}, ...["", "rule", "line", "action", "why"].map((h) => el("th", {}, h)))));
        const tb = el("tbody");
        tab.append(tb);
        for (const r of t.rules)
            row(tb, [el("td", { className: r.matched ? "yes" : "no" }, r.matched ? "matches" : "no"), r.name, r.line, r.action,
                (r.why || "") + (r.dynamic_entry ? " (entry " + r.dynamic_entry + ")" : "") +
                (r.when ? (r.when.in_force ? " in force" : " out of force") + (r.when.next_change ? " until " + when(r.when.next_change) : "") : "")]);
        out.append(tab);
        showError(null);
    }).catch(showError);
}

// ---- trace: live (nfbox trace --live --json, a line a packet) ----

let liveProc = null;

function liveArgs() {
    const args = ["trace", "--live", "--json"];
    const opts = { "lt-in": "--in", "lt-from": "--from", "lt-to": "--to", "lt-proto": "--proto", "lt-port": "--port",
        "lt-count": "--count", "lt-timeout": "--timeout" };
    for (const [id, opt] of Object.entries(opts))
        if ($(id).value.trim())
            args.push(opt, $(id).value.trim());
    return args;
}

function liveRow(p) {
    const tb = $("lt-table").tBodies[0];
    const port = (n) => (n && (p.proto === 6 || p.proto === 17 || p.proto === 132 || p.proto === 136) ? ":" + n : "");
    const c = p.counter ? p.counter.packets + " packets, " + p.counter.bytes + " bytes" : "";
    row(tb, [when(p.ts), p.hook, p.family, p.in, p.out, p.proto, p.src + port(p.sport), p.dst + port(p.dport),
        p.rule, p.action, c]);
}

function liveEnded(text) {
    liveProc = null;
    $("lt-state").textContent = text;
    $("lt-start").hidden = false;
    $("lt-stop").hidden = true;
}

function traceLive(ev) {
    ev.preventDefault();
    if (liveProc)
        return;
    $("lt-table").tBodies[0].replaceChildren();
    let n = 0;
    $("lt-state").textContent = "tracing: waiting for packets";
    $("lt-start").hidden = true;
    $("lt-stop").hidden = false;
    liveProc = nfbox(liveArgs());
    streamJSON(liveProc, (p) => {
        liveRow(p);
        ++n;
        $("lt-state").textContent = "tracing: " + n + (n === 1 ? " packet" : " packets");
    }, () => {});
    const traced = () => n + (n === 1 ? " packet traced" : " packets traced");
    liveProc.then(() => liveEnded(traced()))
        .catch((ex) => liveEnded(traced() + "; " + (ex.message || ex)));
}

// ---- start ----

function start() {
    const perm = cockpit.permission({ admin: true });
    const access = () => {
        admin = !!perm.allowed;
        document.body.classList.toggle("readonly", !admin);
        $("access").textContent = admin ? "" : "Read only: changes need administrative access (Cockpit's superuser).";
    };
    perm.addEventListener("changed", access);
    access();
    for (const b of document.querySelectorAll("#tabs button"))
        b.addEventListener("click", () => showTab(b.dataset.tab));
    refreshers.overview = refreshOverview;
    refreshers.rules = refreshRules;
    refreshers.sets = refreshSets;
    refreshers.events = () => { followEvents(); drawEvents() };
    refreshers.policy = () => loadPolicy().then(watchPending);
    refreshers.captures = refreshCaptures;
    $("set-add").addEventListener("submit", addToSet);
    for (const id of ["ev-rule", "ev-addr", "ev-action"])
        $(id).addEventListener("input", drawEvents);
    $("pol-text").addEventListener("input", () => drawLines());
    $("pol-validate").addEventListener("click", validate);
    $("pol-diff").addEventListener("click", diff);
    $("pol-apply").addEventListener("click", apply);
    $("pol-keep").addEventListener("click", confirmChange);
    $("pol-rollback").addEventListener("click", rollbackNow);
    $("tr-form").addEventListener("submit", trace);
    $("lt-form").addEventListener("submit", traceLive);
    // Closing the process ends the trace in the daemon (its client left).
    $("lt-stop").addEventListener("click", () => { if (liveProc) liveProc.close("terminated") });
    // Live pages: the rules once a second, the overview every five.
    setInterval(() => { if (current === "rules" && !document.hidden) refreshRules() }, 1000);
    setInterval(() => { if (current === "overview" && !document.hidden) refreshOverview() }, 5000);
    showTab("overview");
}

document.addEventListener("DOMContentLoaded", start);
