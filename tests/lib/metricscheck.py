#!/usr/bin/python3
"""Check `nfbox metrics` against `nfbox stats --json` and `status --json`.

    metricscheck.py METRICS STATS STATUS

The metrics are parsed with the Prometheus project's own parser
(python3-prometheus-client), so a line it cannot read fails here. Every rule
and default row of stats must be there with the same packets and bytes (and
a limited rule's over-limit count, and its last hit),
every drop counter with its value, the reloads, each dynamic set's size,
the HTTP server's counts and the policy's fingerprint as status says. Prints each mismatch;
exit 0 when there is none.
"""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families


def main():
    text = open(sys.argv[1]).read()
    stats = json.load(open(sys.argv[2]))
    status = json.load(open(sys.argv[3]))
    got = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            got[(s.name, tuple(sorted(s.labels.items())))] = s.value
    bad = []

    def want(name, labels, value):
        key = (name, tuple(sorted(labels.items())))
        if key not in got:
            bad.append("missing %s %s" % (name, labels))
        elif got[key] != value:
            bad.append("%s %s: %s, stats says %s" % (name, labels, got[key], value))

    for r in stats["rules"]:
        if r["default"]:
            labels = {"hook": r["hook"], "action": r["action"]}
            want("nfbox_default_packets_total", labels, r["packets"])
            want("nfbox_default_bytes_total", labels, r["bytes"])
            continue
        labels = {"hook": r["hook"], "rule": r["rule"], "action": r["action"]}
        want("nfbox_rule_packets_total", labels, r["packets"])
        want("nfbox_rule_bytes_total", labels, r["bytes"])
        if "over_limit" in r:
            want("nfbox_rule_over_limit_total", {"hook": r["hook"], "rule": r["rule"]}, r["over_limit"])
        if "last_hit" in r:  # when the rule last matched, 0 for never
            want("nfbox_rule_last_hit_timestamp_seconds", {"hook": r["hook"], "rule": r["rule"]},
                 round(r["last_hit"] or 0, 3))
    for reason, value in stats["drops"].items():
        want("nfbox_drops_total", {"reason": reason}, value)
    want("nfbox_established_packets_total", {}, stats["established"]["packets"])
    for ds in status.get("dynamic_sets", []):
        want("nfbox_dynamic_set_entries", {"set": ds["set"]}, ds["entries"])
    want("nfbox_reloads_total", {"result": "ok"}, status["reloads_ok"])
    want("nfbox_reloads_total", {"result": "failed"}, status["reloads_failed"])
    http = status.get("metrics_http")
    if http:  # --metrics-listen; the scrape that made METRICS was counted served after
        want("nfbox_http_requests_total", {"result": "refused"}, http["refused"])
        want("nfbox_http_head_timeouts_total", {}, http["head_timeouts"])
        served = got.get(("nfbox_http_requests_total", (("result", "served"),)))
        if served is None or served > http["served"]:
            bad.append("nfbox_http_requests_total served: %s, status says %s" % (served, http["served"]))
    elif any(k[0].startswith("nfbox_http_") for k in got):
        bad.append("nfbox_http_* without --metrics-listen in status")
    info = [k for k in got if k[0] == "nfbox_info"]
    if len(info) != 1 or dict(info[0][1]).get("fingerprint") != status["fingerprint"]:
        bad.append("nfbox_info: %s, fingerprint %s" % (info, status["fingerprint"]))
    for b in bad:
        print(b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
