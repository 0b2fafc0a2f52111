#!/usr/bin/env python3
"""Checks of the rperf3 Helm chart's rendered manifests, its PrometheusRule and
the Grafana dashboard, run by scripts/chart-check.sh (which renders, runs
kubeconform and passes the results here).

    chart_check.py --rendered DIR --metrics FILE --dashboard FILE \
                   --rules-test FILE --promtool PATH --work DIR

DIR holds one VARIANT.yaml per values variant (default, hostnetwork, udp,
monitoring, full, minimal: deploy/helm/rperf3/ci/VARIANT-values.yaml).
FILE given to --metrics is what a running `rperf3 mesh` served at /metrics:
the names of the metrics it serves come from its # TYPE lines.

What it checks:
  * each variant's objects: labels, the DaemonSet (args from the values,
    probe, ports, requests and limits, hostNetwork), the headless Service
    (selector, publishNotReadyAddresses false), the ServiceAccount, Role and
    RoleBinding (get/list/watch on endpointslices only), and the shape of the
    ServiceMonitor and PrometheusRule (kubeconform has no schema for them);
  * every PromQL expression of the PrometheusRule and the dashboard: valid
    (promtool check rules), naming only metrics the agent serves, with the
    labels and label values the agent gives them; the rules' unit tests
    (promtool test rules);
  * the dashboard: JSON, panels, the matrices, the ConfigMap holding it.
Prints every problem found and exits 1 if there was any.
"""

import argparse
import copy
import json
import os
import re
import subprocess
import sys

import yaml

PROBLEMS = []


def problem(where, what):
    PROBLEMS.append(f"{where}: {what}")


# ---------------------------------------------------------------- the agent's metrics

# Labels the agent puts on its series (README, `rperf3 mesh`), and the values
# of the enumerated ones.
PAIR = {"source", "destination"}
LABELS = {
    "rperf3_mesh_throughput_bits_per_second": PAIR,
    "rperf3_mesh_rpm": PAIR,
    "rperf3_mesh_loaded_latency_seconds": PAIR | {"quantile"},
    "rperf3_mesh_idle_latency_seconds": PAIR,
    "rperf3_mesh_retransmits": PAIR,
    "rperf3_mesh_udp_loss_ratio": PAIR,
    "rperf3_mesh_udp_jitter_seconds": PAIR,
    "rperf3_mesh_last_success_timestamp_seconds": PAIR,
    "rperf3_mesh_tests_total": PAIR | {"outcome"},
    "rperf3_mesh_members": set(),
    "rperf3_mesh_cycles_total": set(),
}
VALUES = {
    "quantile": {"0.5", "0.99"},
    "outcome": {"ok", "busy", "unreachable", "not_rperf3", "error", "timeout", "budget", "self_busy", "late"},
}
# What Prometheus adds to every scraped series (a ServiceMonitor, the
# chart's relabeling, or a scrape by annotations).
TARGET_LABELS = {"job", "instance", "namespace", "pod", "node", "service", "endpoint", "container"}


def served_metrics(text):
    """Sample names of the metric families in an OpenMetrics/Prometheus text."""
    names = set()
    suffixes = {
        "counter": ["_total"],
        "gauge": [""],
        "untyped": [""],
        "unknown": [""],
        "histogram": ["_bucket", "_sum", "_count"],
        "summary": ["", "_sum", "_count"],
    }
    for line in text.splitlines():
        m = re.match(r"# TYPE (\S+) (\S+)$", line)
        if m:
            family, kind = m.groups()
            base = family[: -len("_total")] if kind == "counter" and family.endswith("_total") else family
            for s in suffixes.get(kind, [""]):
                names.add(base + s)
        elif line and not line.startswith("#"):
            names.add(re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0))
    return names


# ---------------------------------------------------------------- PromQL

GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
KEYWORDS = {"and", "or", "unless", "bool", "offset", "atan2", "inf", "nan"}
AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk",
                "quantile", "limitk", "limit_ratio"}
TOKEN = re.compile(
    r"""(?P<space>\s+)
      | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
      | (?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[a-zA-Z0-9]*|0x[0-9a-fA-F]+)
      | (?P<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)
      | (?P<brace>\{)
      | (?P<range>\[[^\]]*\])
      | (?P<other>.)""",
    re.X,
)
MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\')\s*(,|$)')


def parse_selector(body):
    """Label matchers of a {...} body: [(label, op, value)]."""
    out, pos = [], 0
    body = body.strip()
    while pos < len(body):
        m = MATCHER.match(body, pos)
        if not m:
            raise ValueError(f"cannot read the matchers {{{body}}}")
        out.append((m.group(1), m.group(2), m.group(3)[1:-1]))
        pos = m.end()
    return out


def analyse(expr):
    """Metric names with their matchers, and the label names used in grouping
    clauses: ([(metric, [(label, op, value)])], {label})."""
    tokens = []
    pos = 0
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
        kind = m.lastgroup
        if kind == "brace":
            depth, end, quote = 0, pos, None
            while end < len(expr):
                c = expr[end]
                if quote:
                    if c == "\\":
                        end += 1
                    elif c == quote:
                        quote = None
                elif c in "\"'":
                    quote = c
                elif c == "{":
                    depth += 1
                elif c == "}":
                    depth -= 1
                    if depth == 0:
                        break
                end += 1
            tokens.append(("brace", expr[pos + 1 : end]))
            pos = end + 1
            continue
        if kind != "space":
            tokens.append((kind, m.group(0)))
        pos = m.end()
    metrics, grouping = [], set()
    i = 0
    while i < len(tokens):
        kind, text = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else (None, None)
        if kind == "ident" and text in GROUPING:
            if nxt == ("other", "("):
                j = i + 2
                while j < len(tokens) and tokens[j] != ("other", ")"):
                    if tokens[j][0] == "ident":
                        grouping.add(tokens[j][1])
                    j += 1
                i = j
        elif kind == "ident" and text.lower() in KEYWORDS:
            pass
        elif kind == "ident" and (nxt == ("other", "(") or (text in AGGREGATIONS and nxt[1] in ("by", "without"))):
            pass  # a function or an aggregation; promtool knows them
        elif kind == "ident":
            matchers = parse_selector(nxt[1]) if nxt[0] == "brace" else []
            metrics.append((text, matchers))
            if nxt[0] == "brace":
                i += 1
        elif kind == "brace":
            raise ValueError("a selector without a metric name")
        i += 1
    return metrics, grouping


def check_promql(where, expr, served):
    try:
        metrics, grouping = analyse(expr)
    except ValueError as e:
        problem(where, f"{e} in {expr!r}")
        return []
    if not metrics:
        problem(where, f"no metric in {expr!r}")
    allowed_any = set().union(*LABELS.values()) | TARGET_LABELS
    for label in grouping - allowed_any:
        problem(where, f"groups by {label!r}, a label no rperf3 series has")
    for name, matchers in metrics:
        if name not in served:
            problem(where, f"{name} is not a metric the agent serves")
            continue
        allowed = LABELS.get(name)
        if allowed is None:
            continue  # the server's own rperf3_* metrics: not used by the chart
        for label, op, value in matchers:
            if label not in allowed | TARGET_LABELS:
                problem(where, f"{name} has no label {label!r}")
            elif label in VALUES and op in ("=", "!="):
                if value not in VALUES[label]:
                    problem(where, f'{name}{{{label}{op}"{value}"}}: the agent gives {label} no such value')
            elif label in VALUES and op in ("=~", "!~"):
                for alt in value.split("|"):
                    if alt not in VALUES[label]:
                        problem(where, f'{name}{{{label}{op}"{value}"}}: {alt!r} is not a value of {label}')
    return metrics


def promtool_check(where, promtool, groups, path):
    with open(path, "w") as f:
        yaml.safe_dump({"groups": groups}, f, sort_keys=False)
    r = subprocess.run([promtool, "check", "rules", path], capture_output=True, text=True)
    if r.returncode != 0:
        problem(where, f"promtool check rules {path}:\n{r.stdout}{r.stderr}")
    return r.returncode == 0


# ---------------------------------------------------------------- manifests

COMMON_LABELS = ["app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
                 "app.kubernetes.io/managed-by", "helm.sh/chart"]
SERVICEMONITOR_SPEC = {"selector", "namespaceSelector", "endpoints", "jobLabel", "targetLabels", "podTargetLabels",
                       "sampleLimit", "targetLimit", "labelLimit", "attachMetadata", "scrapeProtocols"}
SERVICEMONITOR_ENDPOINT = {"port", "targetPort", "path", "scheme", "params", "interval", "scrapeTimeout",
                           "honorLabels", "honorTimestamps", "trackTimestampsStaleness", "relabelings",
                           "metricRelabelings", "tlsConfig", "bearerTokenSecret", "authorization", "basicAuth",
                           "oauth2", "followRedirects", "enableHttp2", "filterRunning", "proxyUrl"}
RELABEL = {"sourceLabels", "separator", "targetLabel", "regex", "modulus", "replacement", "action"}
RULE_GROUP = {"name", "rules", "interval", "limit", "partial_response_strategy", "query_offset", "labels"}
RULE = {"alert", "record", "expr", "for", "keep_firing_for", "labels", "annotations"}
DURATION = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")

# What each variant's values ask for (deploy/helm/rperf3/ci/VARIANT-values.yaml).
EXPECT = {
    "default": dict(host=False, sa=True, rbac=True, sm=False, rule=False, dash=False, scrape=True,
                    args={"-t": "5", "--period": "600", "-p": "5201", "--metrics": "0.0.0.0:9464",
                          "--full-max": "50", "--sample": "8"},
                    absent=["-u", "-b", "-P", "-C", "--slot", "--cycle-bytes", "--cycle-time", "-J", "-d"]),
    "hostnetwork": dict(host=True, sa=True, rbac=True, sm=False, rule=False, dash=False, scrape=True,
                        args={"-t": "5"}, absent=["-u"]),
    "udp": dict(host=False, sa=True, rbac=True, sm=False, rule=False, dash=False, scrape=True,
                args={"-u": None, "-b": "50M", "-P": "2", "--period": "300"}, absent=["-C"]),
    "monitoring": dict(host=False, sa=True, rbac=True, sm=True, rule=True, dash=True, scrape=True,
                       args={"-t": "5"}, absent=[]),
    "full": dict(host=True, sa=True, rbac=True, sm=True, rule=True, dash=True, scrape=True,
                 selector={"namespace": "network", "job": "netmesh"},
                 args={"-p": "15201", "--metrics": "0.0.0.0:19464", "-t": "3", "--slot": "6", "--period": "120",
                       "-b": "1G", "-P": "4", "-C": "cubic", "--cycle-bytes": "10G", "--cycle-time": "90",
                       "--full-max": "20", "--sample": "4", "-J": None, "-d": None, "--start-at": "1700000000"},
                 absent=["-u"]),
    "minimal": dict(host=False, sa=False, rbac=False, sm=False, rule=False, dash=False, scrape=False,
                    args={"-t": "5"}, absent=[]),
}
FLAGS_WITH_VALUE = {"--name", "--peers-k8s", "--namespace", "-p", "--metrics", "-t", "--slot", "--period", "-b",
                    "-P", "-C", "--cycle-bytes", "--cycle-time", "--full-max", "--sample", "--start-at"}


def parse_args(args):
    out, i = {}, 1
    while i < len(args):
        a = args[i]
        if a in FLAGS_WITH_VALUE:
            out[a] = args[i + 1] if i + 1 < len(args) else None
            i += 2
        else:
            out[a] = None
            i += 1
    return out


def check_variant(variant, docs, dashboard_text, served, promtool, rules_test, work):
    exp = EXPECT[variant]
    where = f"[{variant}]"
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
        meta = d.get("metadata", {})
        labels = meta.get("labels") or {}
        for k in COMMON_LABELS:
            if k not in labels:
                problem(f"{where} {d['kind']} {meta.get('name')}", f"no label {k}")
        if labels.get("app.kubernetes.io/name") != "rperf3":
            problem(f"{where} {d['kind']}", "app.kubernetes.io/name is not rperf3")
    wanted = {"DaemonSet": 1, "Service": 1, "ServiceAccount": int(exp["sa"]), "Role": int(exp["rbac"]),
              "RoleBinding": int(exp["rbac"]), "ServiceMonitor": int(exp["sm"]), "PrometheusRule": int(exp["rule"]),
              "ConfigMap": int(exp["dash"])}
    for kind, n in wanted.items():
        if len(by_kind.get(kind, [])) != n:
            problem(where, f"{len(by_kind.get(kind, []))} {kind} object(s), expected {n}")
    for kind in by_kind:
        if kind not in wanted:
            problem(where, f"unexpected kind {kind}")
    if not by_kind.get("DaemonSet") or not by_kind.get("Service"):
        return

    ds, svc = by_kind["DaemonSet"][0], by_kind["Service"][0]
    ns = ds["metadata"]["namespace"]
    pod = ds["spec"]["template"]
    pod_labels = pod["metadata"]["labels"]
    for k in ["app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version"]:
        if k not in pod_labels:
            problem(f"{where} DaemonSet", f"pods have no label {k}")
    sel = ds["spec"]["selector"]["matchLabels"]
    if any(pod_labels.get(k) != v for k, v in sel.items()):
        problem(f"{where} DaemonSet", "its selector does not match its pods' labels")
    spec = pod["spec"]
    if bool(spec.get("hostNetwork")) != exp["host"]:
        problem(f"{where} DaemonSet", f"hostNetwork is {spec.get('hostNetwork')}, expected {exp['host']}")
    if exp["host"] and spec.get("dnsPolicy") != "ClusterFirstWithHostNet":
        problem(f"{where} DaemonSet", "hostNetwork without dnsPolicy ClusterFirstWithHostNet")
    annotations = pod["metadata"].get("annotations") or {}
    if ("prometheus.io/scrape" in annotations) != exp["scrape"]:
        problem(f"{where} DaemonSet", f"prometheus.io annotations: {annotations}")
    if variant == "default" and spec.get("tolerations"):
        problem(f"{where} DaemonSet", "tolerations by default: a NoExecute taint must evict the agents")
    [c] = spec["containers"]
    args = c["args"]
    if args[0] != "mesh":
        problem(f"{where} agent", f"args start with {args[0]!r}, not mesh")
    opts = parse_args(args)
    if opts.get("--peers-k8s") != svc["metadata"]["name"]:
        problem(f"{where} agent", f"--peers-k8s {opts.get('--peers-k8s')} is not the Service {svc['metadata']['name']}")
    if opts.get("--namespace") != ns:
        problem(f"{where} agent", f"--namespace {opts.get('--namespace')} is not the release's {ns}")
    if opts.get("--name") != "$(NODE_NAME)":
        problem(f"{where} agent", "--name is not $(NODE_NAME)")
    env = {e["name"]: e for e in c.get("env", [])}
    if env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") != "spec.nodeName":
        problem(f"{where} agent", "NODE_NAME does not come from spec.nodeName")
    for k, v in exp["args"].items():
        if k not in opts or opts[k] != v:
            problem(f"{where} agent", f"expected {k} {v or ''} in the args, got {opts.get(k, 'nothing')}")
    for k in exp["absent"]:
        if k in opts:
            problem(f"{where} agent", f"unexpected {k} in the args")
    ports = {p["name"]: p for p in c.get("ports", [])}
    for name, proto in [("test", "TCP"), ("test-udp", "UDP"), ("metrics", "TCP")]:
        if name not in ports or ports[name].get("protocol", "TCP") != proto:
            problem(f"{where} agent", f"no {proto} container port named {name}")
    if "metrics" in ports and opts.get("--metrics") != f"0.0.0.0:{ports['metrics']['containerPort']}":
        problem(f"{where} agent", "--metrics does not listen on the metrics port")
    if "test" in ports and opts.get("-p") != str(ports["test"]["containerPort"]):
        problem(f"{where} agent", "-p is not the test port")
    if annotations.get("prometheus.io/port") not in (None, str(ports.get("metrics", {}).get("containerPort"))):
        problem(f"{where} DaemonSet", "prometheus.io/port is not the metrics port")
    probe = c.get("readinessProbe", {}).get("httpGet", {})
    if probe.get("path") != "/metrics" or probe.get("port") != "metrics":
        problem(f"{where} agent", f"readiness probe is not httpGet /metrics on port metrics: {probe}")
    res = c.get("resources", {})
    for part in ("requests", "limits"):
        for r in ("cpu", "memory"):
            if r not in res.get(part, {}):
                problem(f"{where} agent", f"no {r} {part}")
    sa_name = spec.get("serviceAccountName")

    # the headless Service: its EndpointSlices are the member list
    s = svc["spec"]
    if s.get("clusterIP") != "None":
        problem(f"{where} Service", "is not headless (clusterIP: None)")
    if s.get("publishNotReadyAddresses") is not False:
        problem(f"{where} Service", "publishNotReadyAddresses is not false")
    if s.get("selector") != sel:
        problem(f"{where} Service", f"selector {s.get('selector')} is not the DaemonSet's {sel}")
    svc_ports = {p["name"]: p for p in s.get("ports", [])}
    for name in ("test", "test-udp", "metrics"):
        if name not in svc_ports or svc_ports[name].get("targetPort") != name:
            problem(f"{where} Service", f"no port {name} to the container port {name}")

    if exp["sa"]:
        sa = by_kind["ServiceAccount"][0]
        if sa["metadata"]["name"] != sa_name:
            problem(f"{where} ServiceAccount", f"{sa['metadata']['name']} is not the pods' {sa_name}")
    if exp["rbac"]:
        role, rb = by_kind["Role"][0], by_kind["RoleBinding"][0]
        want = [{"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["get", "list", "watch"]}]
        if role.get("rules") != want:
            problem(f"{where} Role", f"rules {role.get('rules')} are not {want}")
        if rb["roleRef"] != {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role["metadata"]["name"]}:
            problem(f"{where} RoleBinding", f"roleRef {rb['roleRef']}")
        if rb["subjects"] != [{"kind": "ServiceAccount", "name": sa_name, "namespace": ns}]:
            problem(f"{where} RoleBinding", f"subjects {rb['subjects']} are not the pods' ServiceAccount")

    if exp["sm"]:
        check_servicemonitor(where, by_kind["ServiceMonitor"][0], svc, ns)
    if exp["rule"]:
        check_rule(where, by_kind["PrometheusRule"][0], served, promtool, exp.get("selector"),
                   rules_test if variant == "monitoring" else None, os.path.join(work, f"rules-{variant}"))
    if exp["dash"]:
        cm = by_kind["ConfigMap"][0]
        if (cm["metadata"].get("labels") or {}).get("grafana_dashboard") != "1":
            problem(f"{where} dashboard ConfigMap", "no label grafana_dashboard=1 for Grafana's sidecar")
        if cm.get("data", {}).get("rperf3-mesh.json") != dashboard_text.rstrip("\n"):
            problem(f"{where} dashboard ConfigMap", "its rperf3-mesh.json is not deploy/grafana/rperf3-mesh.json")
        if variant == "full" and cm["metadata"]["namespace"] != "monitoring":
            problem(f"{where} dashboard ConfigMap", "grafanaDashboard.namespace ignored")


def check_servicemonitor(where, sm, svc, ns):
    where += " ServiceMonitor"
    if sm.get("apiVersion") != "monitoring.coreos.com/v1":
        problem(where, f"apiVersion {sm.get('apiVersion')}")
    if set(sm) - {"apiVersion", "kind", "metadata", "spec"}:
        problem(where, f"unknown top-level fields {set(sm) - {'apiVersion', 'kind', 'metadata', 'spec'}}")
    spec = sm.get("spec", {})
    if set(spec) - SERVICEMONITOR_SPEC:
        problem(where, f"unknown spec fields {set(spec) - SERVICEMONITOR_SPEC}")
    labels = svc["metadata"]["labels"]
    ml = spec.get("selector", {}).get("matchLabels", {})
    if not ml or any(labels.get(k) != v for k, v in ml.items()):
        problem(where, f"selector {ml} does not select the Service (labels {labels})")
    if spec.get("namespaceSelector") != {"matchNames": [ns]}:
        problem(where, f"namespaceSelector {spec.get('namespaceSelector')}")
    names = {p["name"] for p in svc["spec"]["ports"]}
    eps = spec.get("endpoints") or []
    if not eps:
        problem(where, "no endpoints")
    for ep in eps:
        if set(ep) - SERVICEMONITOR_ENDPOINT:
            problem(where, f"unknown endpoint fields {set(ep) - SERVICEMONITOR_ENDPOINT}")
        if ep.get("port") != "metrics" or "metrics" not in names:
            problem(where, f"endpoint port {ep.get('port')} is not the Service's metrics port")
        for k in ("interval", "scrapeTimeout"):
            if k in ep and not DURATION.match(str(ep[k])):
                problem(where, f"{k} {ep[k]!r} is not a duration")
        for r in ep.get("relabelings", []) + ep.get("metricRelabelings", []):
            if set(r) - RELABEL:
                problem(where, f"unknown relabeling fields {set(r) - RELABEL}")


def check_rule(where, rule, served, promtool, selector, rules_test, base):
    where += " PrometheusRule"
    if rule.get("apiVersion") != "monitoring.coreos.com/v1":
        problem(where, f"apiVersion {rule.get('apiVersion')}")
    if set(rule) - {"apiVersion", "kind", "metadata", "spec"}:
        problem(where, f"unknown top-level fields {set(rule) - {'apiVersion', 'kind', 'metadata', 'spec'}}")
    spec = rule.get("spec", {})
    if set(spec) != {"groups"}:
        problem(where, f"spec fields {set(spec)}, expected groups")
    groups = spec.get("groups") or []
    alerts = set()
    for g in groups:
        if set(g) - RULE_GROUP or "name" not in g or not g.get("rules"):
            problem(where, f"group {g.get('name')}: fields {set(g)}")
        for r in g.get("rules", []):
            name = r.get("alert") or r.get("record")
            if set(r) - RULE or "expr" not in r or bool(r.get("alert")) == bool(r.get("record")):
                problem(where, f"rule {name}: fields {set(r)}")
            for k in ("for", "keep_firing_for"):
                if k in r and not DURATION.match(str(r[k])):
                    problem(where, f"rule {name}: {k} {r[k]!r} is not a duration")
            metrics = check_promql(f"{where} {name}", r.get("expr", ""), served)
            if selector:
                for m, matchers in metrics:
                    got = {label: value for label, op, value in matchers if op == "="}
                    if any(got.get(k) != v for k, v in selector.items()):
                        problem(f"{where} {name}", f"{m} lacks the selector {selector}")
            alerts.add(name)
    want = {"Rperf3MeshThroughputDrop", "Rperf3MeshLowResponsiveness", "Rperf3MeshPairStale",
            "Rperf3MeshPairNeverSucceeded", "Rperf3MeshTestsFailing"}
    if alerts != want:
        problem(where, f"alerts {sorted(alerts)}, expected {sorted(want)}")
    os.makedirs(base, exist_ok=True)
    if not promtool_check(where, promtool, groups, os.path.join(base, "rules-as-rendered.yaml")):
        return
    if rules_test:
        # The unit tests compare alerts' labels and annotations; they test
        # the expressions, so the annotations are left out here (their
        # templates were checked above).
        bare = copy.deepcopy(groups)
        for g in bare:
            for r in g["rules"]:
                r.pop("annotations", None)
        with open(os.path.join(base, "rules.yaml"), "w") as f:
            yaml.safe_dump({"groups": bare}, f, sort_keys=False)
        with open(rules_test) as src, open(os.path.join(base, "test.yaml"), "w") as dst:
            dst.write(src.read())
        r = subprocess.run([promtool, "test", "rules", "test.yaml"], cwd=base, capture_output=True, text=True)
        if r.returncode != 0:
            problem(where, f"promtool test rules:\n{r.stdout}{r.stderr}")
        else:
            print(f"{where}: promtool test rules: {r.stdout.strip().splitlines()[-1]}")


# ---------------------------------------------------------------- dashboard

GRAFANA_VARS = {"__rate_interval": "5m", "__interval": "1m", "__range": "1h", "__range_s": "3600",
                "source": ".*", "destination": ".*"}


def grafana_expand(where, expr):
    def sub(m):
        name = m.group(1) or m.group(2)
        if name not in GRAFANA_VARS:
            problem(where, f"unknown dashboard variable ${name}")
            return "x"
        return GRAFANA_VARS[name]

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", sub, expr)


def check_dashboard(path, served, promtool, work):
    where = "dashboard"
    with open(path) as f:
        text = f.read()
    try:
        dash = json.loads(text)
    except json.JSONDecodeError as e:
        problem(where, f"{path} is not JSON: {e}")
        return text
    for k in ("title", "uid", "panels", "templating", "schemaVersion"):
        if k not in dash:
            problem(where, f"no {k}")
    variables = {v["name"]: v for v in dash.get("templating", {}).get("list", [])}
    dsv = variables.get("datasource", {})
    if dsv.get("type") != "datasource" or dsv.get("query") != "prometheus":
        problem(where, "no Prometheus data source variable named datasource")
    exprs = []
    for name, v in variables.items():
        if v.get("type") != "query":
            continue
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        m = re.fullmatch(r"label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*(\w+)\s*\)", q or "")
        if not m:
            problem(f"{where} variable {name}", f"query {q!r} is not label_values(metric, label)")
        elif m.group(1) not in served:
            problem(f"{where} variable {name}", f"{m.group(1)} is not a metric the agent serves")
        elif m.group(2) not in LABELS.get(m.group(1), set()):
            problem(f"{where} variable {name}", f"{m.group(1)} has no label {m.group(2)}")
    ids = set()
    panels = []
    for p in dash.get("panels", []):
        panels.append(p)
        panels.extend(p.get("panels", []))
    for p in panels:
        pw = f"{where} panel {p.get('title')!r}"
        if p.get("id") in ids:
            problem(pw, f"duplicate id {p.get('id')}")
        ids.add(p.get("id"))
        if "gridPos" not in p:
            problem(pw, "no gridPos")
        for t in p.get("targets", []):
            if p.get("datasource", {}).get("uid") != "${datasource}" or t.get("datasource", {}).get("uid") != "${datasource}":
                problem(pw, "does not query the ${datasource} variable")
            if not t.get("expr"):
                problem(pw, "a target without expr")
                continue
            expr = grafana_expand(pw, t["expr"])
            check_promql(pw, expr, served)
            exprs.append((p, t, expr))
    # the layout: inside the 24 columns, no two panels on the same cells
    cells = {}
    for p in dash.get("panels", []):
        g = p.get("gridPos", {})
        x, y, w, h = (g.get(k, 0) for k in ("x", "y", "w", "h"))
        if x < 0 or w < 1 or h < 1 or x + w > 24:
            problem(f"{where} panel {p.get('title')!r}", f"gridPos {g} is outside the 24 columns")
        for cx in range(x, x + w):
            for cy in range(y, y + h):
                if (cx, cy) in cells:
                    problem(f"{where} panel {p.get('title')!r}", f"overlaps panel {cells[(cx, cy)]!r}")
                    break
                cells[(cx, cy)] = p.get("title")
            else:
                continue
            break
    # the matrices: source x destination tables of the last values
    matrices = {}
    for p, t, expr in exprs:
        for tr in p.get("transformations", []):
            if tr.get("id") == "groupingToMatrix":
                o = tr.get("options", {})
                if (o.get("rowField"), o.get("columnField"), o.get("valueField")) != ("source", "destination", "Value"):
                    problem(f"{where} panel {p.get('title')!r}", f"matrix options {o}")
                if not (t.get("instant") and t.get("format") == "table"):
                    problem(f"{where} panel {p.get('title')!r}", "a matrix needs an instant query as a table")
                matrices[p.get("title")] = expr
    for what, pattern in [("throughput", r"rperf3_mesh_throughput_bits_per_second"),
                          ("loaded latency p50", r'rperf3_mesh_loaded_latency_seconds\{quantile="0\.5"'),
                          ("RPM", r"rperf3_mesh_rpm")]:
        if not any(re.search(pattern, e) for e in matrices.values()):
            problem(where, f"no source x destination matrix of {what}")
    if not any(re.search(r"by \(outcome\).*rperf3_mesh_tests_total", e) for _, _, e in exprs):
        problem(where, "no panel of tests by outcome")
    if not any(re.match(r"(bottomk|topk)\(", e) and p.get("type") == "timeseries" for p, _, e in exprs):
        problem(where, "no panel of the worst pairs over time")
    # every expression parses (as recording rules for promtool)
    rules = [{"record": f"dashboard_check_{i}", "expr": e} for i, (_, _, e) in enumerate(exprs)]
    if rules:
        promtool_check(where, promtool, [{"name": "dashboard", "rules": rules}], os.path.join(work, "dashboard-rules.yaml"))
    print(f"{where}: {len(panels)} panels, {len(exprs)} queries, {len(matrices)} matrices")
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rendered", required=True)
    ap.add_argument("--metrics", required=True)
    ap.add_argument("--dashboard", required=True)
    ap.add_argument("--rules-test", required=True)
    ap.add_argument("--promtool", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()

    with open(a.metrics) as f:
        served = served_metrics(f.read())
    missing = sorted(set(LABELS) - served)
    if missing:
        problem("the agent's /metrics", f"lacks {missing}")
    print(f"the agent serves {len(served)} metric names, {len([s for s in served if s.startswith('rperf3_mesh_')])} of the mesh")

    dashboard_text = check_dashboard(a.dashboard, served, a.promtool, a.work)
    for variant in EXPECT:
        path = os.path.join(a.rendered, f"{variant}.yaml")
        if not os.path.exists(path):
            problem(f"[{variant}]", f"not rendered ({path})")
            continue
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        check_variant(variant, docs, dashboard_text, served, a.promtool, a.rules_test, a.work)
        print(f"[{variant}]: {len(docs)} objects checked")

    if PROBLEMS:
        print(f"\n{len(PROBLEMS)} problem(s):", file=sys.stderr)
        for p in PROBLEMS:
            print(f"  {p}", file=sys.stderr)
        sys.exit(1)
    print("chart_check: all checks passed")


if __name__ == "__main__":
    main()
