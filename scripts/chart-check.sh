#!/usr/bin/env bash
# chart-check.sh - check the Helm chart (deploy/helm/rperf3), its alerts and
# the Grafana dashboard, without a cluster. Fails loudly on any problem.
#
#   1. helm lint --strict, with the default values and each variant in
#      deploy/helm/rperf3/ci/*-values.yaml
#   2. helm template of each variant (default, hostNetwork, UDP, monitoring
#      on, everything set, nothing optional) and helm package
#   3. kubeconform -strict of every rendered object against the Kubernetes
#      1.34 JSON schemas (from the PyPI package kubernetes-validate); first a
#      self-test that it rejects an unknown field and an unknown kind. The
#      Prometheus Operator's kinds (ServiceMonitor, PrometheusRule) have no
#      schema there and are skipped by kubeconform; step 4 checks them.
#   4. scripts/chart_check.py: the objects against the values, the shape of
#      the ServiceMonitor and PrometheusRule, promtool check rules on the rule
#      groups and promtool test rules (ci/prometheusrule-test.yaml), and every
#      PromQL expression of the rules and of the dashboard: valid, and naming
#      only metrics that `rperf3 mesh` serves (read from a running agent's
#      /metrics) with their labels.
#
# Tools: helm and kubeconform built by scripts/k8s-tools.sh (cached in
# /var/cache/rperf3-tools), promtool (Debian's prometheus package), python3
# with PyYAML, curl, and the rperf3 release binary (built with cargo if
# missing; RPERF3_BIN names another).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
# shellcheck source=scripts/k8s-tools.sh
. scripts/k8s-tools.sh

CHART=$REPO/deploy/helm/rperf3
DASHBOARD=$REPO/deploy/grafana/rperf3-mesh.json
KUBE_VERSION=1.34.4
VARIANTS=(default hostnetwork udp monitoring full minimal)

T_START=$(date +%s.%N)
TMP=$(mktemp -d)
AGENT_PID=""
cleanup() {
	if [ -n "$AGENT_PID" ]; then
		kill "$AGENT_PID" 2>/dev/null || true
		wait "$AGENT_PID" 2>/dev/null || true
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT

log() { printf '[chart-check %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
fail() {
	printf '[chart-check] FAILED: %s\n' "$*" >&2
	exit 1
}
secs_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# ------------------------------------------------------------------ tools
t0=$(date +%s.%N)
PROMTOOL=$(command -v promtool) || fail "promtool is required (apt-get install prometheus)"
command -v python3 >/dev/null || fail "python3 is required"
python3 -c 'import yaml' 2>/dev/null || fail "python3 lacks PyYAML (apt-get install python3-yaml)"
command -v curl >/dev/null || fail "curl is required"
HELM=$(tools_helm)
KUBECONFORM=$(tools_kubeconform)
SCHEMAS=$(tools_schemas)
SCHEMA_LOCATION="$SCHEMAS/v$K8S_SCHEMA_VERSION-local{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json"
log "helm $("$HELM" version --short), kubeconform $("$KUBECONFORM" -v), $("$PROMTOOL" --version 2>&1 | sed -n 1p)," \
	"schemas $(cat "$SCHEMAS/.version") ($(secs_since "$t0")s)"

# ------------------------------------------------------------------ 1. lint
t0=$(date +%s.%N)
lint() {
	local out
	if ! out=$("$HELM" lint --strict --kube-version "$KUBE_VERSION" "$CHART" "$@" 2>&1); then
		printf '%s\n' "$out" >&2
		fail "helm lint --strict $* failed"
	fi
}
lint
for v in "${VARIANTS[@]}"; do
	[ "$v" = default ] || lint -f "$CHART/ci/$v-values.yaml"
done
log "helm lint --strict: default values and ${#VARIANTS[@]} variants ($(secs_since "$t0")s)"

# ------------------------------------------------------------------ 2. render
t0=$(date +%s.%N)
mkdir -p "$TMP/rendered"
for v in "${VARIANTS[@]}"; do
	args=()
	[ "$v" = default ] || args=(-f "$CHART/ci/$v-values.yaml")
	"$HELM" template rperf3 "$CHART" --namespace rperf3 --kube-version "$KUBE_VERSION" "${args[@]}" \
		>"$TMP/rendered/$v.yaml" 2>"$TMP/template.err" || {
		cat "$TMP/template.err" >&2
		fail "helm template ($v) failed"
	}
	[ ! -s "$TMP/template.err" ] || {
		cat "$TMP/template.err" >&2
		fail "helm template ($v) wrote to stderr"
	}
done
"$HELM" package "$CHART" --destination "$TMP/package" >/dev/null || fail "helm package failed"
pkg=$(ls "$TMP"/package/rperf3-*.tgz)
tar tzf "$pkg" >"$TMP/package.list" || fail "cannot list $pkg"
grep -qx 'rperf3/dashboards/rperf3-mesh.json' "$TMP/package.list" || fail "the packaged chart lacks the dashboard"
! grep -q '^rperf3/ci/' "$TMP/package.list" || fail "the packaged chart holds ci/ (see .helmignore)"
log "helm template: ${#VARIANTS[@]} variants; helm package: ${pkg##*/} ($(secs_since "$t0")s)"

# ------------------------------------------------------------------ 3. kubeconform
t0=$(date +%s.%N)
kubeconform() {
	"$KUBECONFORM" -strict -summary -schema-location "$SCHEMA_LOCATION" -skip ServiceMonitor,PrometheusRule "$@"
}
# The self-test: a wrong field, a wrong type and a kind without a schema are
# each an error (so a missing or unreadable schema cannot pass unnoticed).
cat >"$TMP/bad-field.yaml" <<'EOF'
apiVersion: v1
kind: Service
metadata: {name: x}
spec:
  clusterIP: None
  publishNotReadyAdresses: false
  ports: [{name: test, port: 5201}]
EOF
cat >"$TMP/bad-type.yaml" <<'EOF'
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: x}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      containers: [{name: c, image: i, ports: [{containerPort: "5201"}]}]
EOF
cat >"$TMP/bad-kind.yaml" <<'EOF'
apiVersion: example.org/v1
kind: Frobnicator
metadata: {name: x}
EOF
for f in bad-field bad-type bad-kind; do
	if kubeconform "$TMP/$f.yaml" >"$TMP/$f.out" 2>&1; then
		cat "$TMP/$f.out" >&2
		fail "kubeconform accepted $f.yaml: the schemas are not applied"
	fi
done
grep -q 'publishNotReadyAdresses' "$TMP/bad-field.out" || fail "kubeconform: $(cat "$TMP/bad-field.out")"
for v in "${VARIANTS[@]}"; do
	f=$TMP/rendered/$v.yaml
	out=$(kubeconform "$f" 2>&1) || {
		printf '%s\n' "$out" >&2
		fail "kubeconform: the $v manifests are invalid for Kubernetes $K8S_SCHEMA_VERSION"
	}
	# every object is accounted for: the CRD kinds skipped, all others valid
	total=$(grep -c '^kind: ' "$f")
	crds=$(grep -cE '^kind: (ServiceMonitor|PrometheusRule)$' "$f" || true)
	summary=$(printf '%s\n' "$out" | grep '^Summary:' || true)
	case "$summary" in
	*"Valid: $((total - crds)), Invalid: 0, Errors: 0, Skipped: $crds") ;;
	*) fail "kubeconform ($v): expected $((total - crds)) valid and $crds skipped: $summary" ;;
	esac
	log "kubeconform -strict ($v): ${summary#Summary: }"
done
log "kubeconform done ($(secs_since "$t0")s)"

# ------------------------------------------------------------------ 4. metrics, PromQL, shapes
t0=$(date +%s.%N)
BIN=${RPERF3_BIN:-target/release/rperf3}
if [ ! -x "$BIN" ]; then
	[ -z "${RPERF3_BIN:-}" ] || fail "RPERF3_BIN=$RPERF3_BIN is not an executable"
	log "no $BIN: cargo build --release"
	cargo build --release --locked --bin rperf3
fi
# A lone agent on loopback serves every metric family (with no pairs yet).
read -r port mport < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in ss))')
echo "check 127.0.0.1:$port" >"$TMP/peers"
"$BIN" mesh --name check --peers "$TMP/peers" -B 127.0.0.1 -p "$port" --metrics "127.0.0.1:$mport" -t 1 \
	>"$TMP/agent.out" 2>"$TMP/agent.err" &
AGENT_PID=$!
for _ in $(seq 1 50); do
	curl -sf --max-time 2 "http://127.0.0.1:$mport/metrics" -o "$TMP/metrics.txt" 2>/dev/null && break
	kill -0 "$AGENT_PID" 2>/dev/null || break
	sleep 0.1
done
kill "$AGENT_PID" 2>/dev/null || true
wait "$AGENT_PID" 2>/dev/null || true
AGENT_PID=""
[ -s "$TMP/metrics.txt" ] || {
	cat "$TMP/agent.err" >&2
	fail "the agent ($BIN mesh) served no metrics on 127.0.0.1:$mport"
}
python3 scripts/chart_check.py --rendered "$TMP/rendered" --metrics "$TMP/metrics.txt" --dashboard "$DASHBOARD" \
	--rules-test "$CHART/ci/prometheusrule-test.yaml" --promtool "$PROMTOOL" --work "$TMP" ||
	fail "scripts/chart_check.py found problems (above)"
log "manifests, rules and dashboard checked ($(secs_since "$t0")s)"
log "all chart checks passed in $(secs_since "$T_START")s"
