#!/usr/bin/env bash
# k8s-e2e.sh - the Helm chart end to end on a real 3-node Kubernetes 1.34
# cluster: the rig in ../shared/k8s (network namespaces on this machine, no
# registry). Needs root. Always tears the cluster down on exit.
#
#   1. builds the rig if its cache is missing (../shared/k8s/build.sh), then
#      up.sh 3
#   2. scripts/image.sh, load-image.sh into every node, helm install of
#      deploy/helm/rperf3 (helm from scripts/k8s-tools.sh) with 1 s tests in
#      3 s slots
#   3. proves that
#      (a) a cycle completes on all 3 nodes with all 6 ordered pairs in the
#          agents' metrics (throughput and at least one ok test each);
#      (b) a deleted agent pod comes back (DaemonSet) and the pairs from and
#          to its node get a newer last success than before the deletion;
#      (c) a node whose agent is evicted (a NoExecute taint the chart does not
#          tolerate) leaves the mesh: after the next cycle no agent has any
#          series of it.
#   Metrics are read from the host, which reaches the pods' addresses.
#
# Prints the time of each phase; exits non-zero with the reason, the pods,
# events and agent logs on any failure.
#
# Environment: RK8S_CACHE (the rig's cache, default /var/cache/rperf3-k8s),
# RPERF3_SHARED (default: ../shared beside the repository), RPERF3_TOOLS.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
# shellcheck source=scripts/k8s-tools.sh
. scripts/k8s-tools.sh

SHARED=${RPERF3_SHARED:-$REPO/../shared}
SHARED=$(cd "$SHARED" 2>/dev/null && pwd) || SHARED=${RPERF3_SHARED:-$REPO/../shared}
RIG=$SHARED/k8s
NODES=3
NS=rperf3-e2e
RELEASE=rperf3
IMAGE=localhost/rperf3:e2e
CHART=$REPO/deploy/helm/rperf3
# Short tests: a 3-node cycle is 6 slots of 3 s.
TEST_SECS=1
SLOT_SECS=3
VICTIM_POD_NODE=n2   # (b)
GONE_NODE=n3         # (c)
TAINT=rperf3-e2e/evict=true:NoExecute

T_START=$(date +%s.%N)
TIMINGS=()
PHASE=""
PHASE_T0=""
UP_STARTED=0
TMP=$(mktemp -d)

log() { printf '[k8s-e2e %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
secs_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
phase() {
	end_phase
	PHASE=$1
	PHASE_T0=$(date +%s.%N)
	log "== $PHASE"
}
end_phase() {
	if [ -n "$PHASE" ]; then
		TIMINGS+=("$(printf '%-40s %6ss' "$PHASE" "$(secs_since "$PHASE_T0")")")
		PHASE=""
	fi
}

# cluster_live_pid: print "NAME (pid N)" of the first process the rig
# recorded for its cluster that still runs, by the rig's own check
# (`recorded_pid`: same PID and start time, not a zombie); false when none
# does. In a subshell: the rig's helpers would replace this script's `log`.
cluster_live_pid() {
	(
		# shellcheck source=/dev/null
		. "$RIG/common.sh"
		for f in "$RUN"/pids/*; do
			[ -f "$f" ] || continue
			if pid=$(recorded_pid "${f##*/}"); then
				echo "${f##*/} (pid $pid)"
				exit 0
			fi
		done
		exit 1
	)
}

kc() { kubectl --kubeconfig "$RK8S_CACHE/kubeconfig" "$@"; }

diagnose() {
	[ "$UP_STARTED" = 1 ] && [ -f "$RK8S_CACHE/kubeconfig" ] || return 0
	echo "---- pods"
	kc -n "$NS" get pods -o wide 2>&1 || true
	echo "---- endpointslices"
	kc -n "$NS" get endpointslices -o wide 2>&1 || true
	echo "---- events"
	kc -n "$NS" get events --sort-by=.lastTimestamp 2>&1 | tail -n 25 || true
	local p
	for p in $(kc -n "$NS" get pods -l "app.kubernetes.io/instance=$RELEASE" -o name 2>/dev/null); do
		echo "---- logs of $p (last 40 lines)"
		kc -n "$NS" logs "$p" --tail 40 2>&1 | grep -v '^{' || true
	done
	for f in "$TMP"/metrics.*; do
		[ -f "$f" ] || continue
		echo "---- last scrape of ${f##*.}"
		grep -E '^rperf3_mesh_(throughput|tests_total|last_success|members|cycles)' "$f" || true
	done
}

fail() {
	printf '[k8s-e2e] FAILED (%s): %s\n' "${PHASE:-setup}" "$*" >&2
	diagnose >&2
	exit 1
}

on_exit() {
	local rc=$?
	end_phase
	if [ "$UP_STARTED" = 1 ]; then
		local t0
		t0=$(date +%s.%N)
		log "== tearing down the cluster (down.sh)"
		if bash "$RIG/down.sh" >"$TMP/down.log" 2>&1; then
			TIMINGS+=("$(printf '%-40s %6ss' "down.sh" "$(secs_since "$t0")")")
		else
			cat "$TMP/down.log" >&2
			printf '[k8s-e2e] down.sh failed; see above\n' >&2
			[ "$rc" != 0 ] || rc=1
		fi
	fi
	if [ "${#TIMINGS[@]}" -gt 0 ]; then
		echo "k8s-e2e timings:"
		printf '  %s\n' "${TIMINGS[@]}"
		printf '  %-40s %6ss\n' total "$(secs_since "$T_START")"
	fi
	rm -rf "$TMP"
	if [ "$rc" = 0 ]; then log "PASSED"; else printf '[k8s-e2e] exit status %s\n' "$rc" >&2; fi
	exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------------------------ helpers
# agents: "POD NODE IP UID" of every ready, not terminating agent pod.
agents() {
	kc -n "$NS" get pods -l "app.kubernetes.io/instance=$RELEASE,app.kubernetes.io/name=rperf3" -o \
		jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName} {.status.podIP} {.metadata.uid} {.status.conditions[?(@.type=="Ready")].status} {.metadata.deletionTimestamp}{"\n"}{end}' |
		awk '$5 == "True" && $6 == "" { print $1, $2, $3, $4 }'
}

# scrape: the metrics of every ready agent into $TMP/metrics.NODE (the
# files of agents that are gone are removed); fails on no answer.
scrape() {
	local pod node ip
	rm -f "$TMP"/metrics.*
	while read -r pod node ip _; do
		curl -sS --fail --max-time 3 "http://$ip:9464/metrics" -o "$TMP/metrics.$node" 2>"$TMP/curl.err" ||
			{ log "scrape of $pod ($node, $ip) failed: $(cat "$TMP/curl.err")"; return 1; }
	done < <(agents)
}

# series METRIC [FILTER]: "NODE SOURCE DESTINATION VALUE" for each sample of
# METRIC (with a label set matching the regex FILTER) in the last scrape.
series() {
	local f
	for f in "$TMP"/metrics.*; do
		[ -f "$f" ] || continue
		grep -E "^$1\{" "$f" | grep -E -- "${2:-.}" |
			awk -v node="${f##*.}" '{
				s = d = "-"
				if (match($0, /source="[^"]*"/)) s = substr($0, RSTART + 8, RLENGTH - 9)
				if (match($0, /destination="[^"]*"/)) d = substr($0, RSTART + 13, RLENGTH - 14)
				print node, s, d, $NF
			}' || true
	done
}

# gauge NODE METRIC: an agent's own unlabelled gauge or counter ("" if none).
gauge() {
	[ -f "$TMP/metrics.$1" ] || return 0
	awk -v m="$2" '$1 == m { print $2 }' "$TMP/metrics.$1"
}

# value SOURCE DESTINATION METRIC [FILTER]: the pair's value ("" if none),
# from the source's own agent.
value() {
	series "$3" "${4:-.}" | awk -v s="$1" -v d="$2" '!found && $1 == s && $2 == s && $3 == d { print $4; found = 1 }'
}

# wait_until SECONDS WHAT CHECK...: run CHECK every second until it succeeds.
wait_until() {
	local limit=$1 what=$2 t0
	shift 2
	t0=$(date +%s)
	until "$@"; do
		[ $(($(date +%s) - t0)) -lt "$limit" ] || fail "$what: not within ${limit}s"
		sleep 1
	done
	log "$what ($(($(date +%s) - t0))s)"
}

gt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 > b + 0) }'; }

# ------------------------------------------------------------------ checks
# (a) every ordered pair of NODE_NAMES has a throughput and an ok test, from
# its source's agent; every agent sees all members and finished a cycle.
all_pairs_measured() {
	scrape || return 1
	local s d n
	for s in "${NODE_NAMES[@]}"; do
		n=$(gauge "$s" rperf3_mesh_members)
		[ "${n%.0}" = "${#NODE_NAMES[@]}" ] || return 1
		n=$(gauge "$s" rperf3_mesh_cycles_total)
		[ -n "$n" ] && gt "$n" 0 || return 1
		for d in "${NODE_NAMES[@]}"; do
			[ "$s" != "$d" ] || continue
			[ -n "$(value "$s" "$d" rperf3_mesh_throughput_bits_per_second)" ] || return 1
			n=$(value "$s" "$d" rperf3_mesh_tests_total 'outcome="ok"')
			[ -n "$n" ] && ! gt 1 "$n" || return 1
		done
	done
	# no agent reports a pair of another source
	[ -z "$(series rperf3_mesh_throughput_bits_per_second | awk '$1 != $2')" ] ||
		fail "an agent reports pairs of another source: $(series rperf3_mesh_throughput_bits_per_second | awk '$1 != $2')"
}

# (b) the pairs from and to NODE ($1) all ended a test after time $2.
pairs_resumed() {
	scrape || return 1
	local other v
	for other in "${NODE_NAMES[@]}"; do
		[ "$other" != "$1" ] || continue
		v=$(value "$1" "$other" rperf3_mesh_last_success_timestamp_seconds)
		[ -n "$v" ] && gt "$v" "$2" || return 1
		v=$(value "$other" "$1" rperf3_mesh_last_success_timestamp_seconds)
		[ -n "$v" ] && gt "$v" "$2" || return 1
	done
}

# (c) no pod and no endpoint of NODE ($1) remain.
node_left() {
	[ -z "$(kc -n "$NS" get pods -l "app.kubernetes.io/instance=$RELEASE" -o \
		jsonpath="{range .items[?(@.spec.nodeName==\"$1\")]}{.metadata.name}{\"\n\"}{end}")" ] || return 1
	local eps
	eps=$(kc -n "$NS" get endpointslices -l "kubernetes.io/service-name=$RELEASE" \
		-o jsonpath='{range .items[*].endpoints[*]}{.nodeName}{"\n"}{end}') || return 1
	! grep -qxF "$1" <<<"$eps"
}

# (c) every remaining agent ($2...) has 2 members, finished a cycle more than
# the count in $TMP/cycles.NODE, and no series naming NODE ($1) at all.
node_series_gone() {
	local gone=$1 node n
	shift
	scrape || return 1
	for node in "$@"; do
		[ -f "$TMP/metrics.$node" ] || return 1
		n=$(gauge "$node" rperf3_mesh_members)
		[ "${n%.0}" = "$#" ] || return 1
		n=$(gauge "$node" rperf3_mesh_cycles_total)
		gt "$n" "$(cat "$TMP/cycles.$node")" || return 1
		! grep -E "^rperf3_mesh_[a-z_]+\{.*(source|destination)=\"$gone\"" "$TMP/metrics.$node" >/dev/null || return 1
	done
	[ ! -f "$TMP/metrics.$gone" ] || return 1
}

# ------------------------------------------------------------------ run
[ "$(id -u)" = 0 ] || fail "must run as root (the rig makes network namespaces and runs containerd)"
[ -d "$RIG" ] || fail "the Kubernetes rig is not at $RIG (set RPERF3_SHARED to the shared directory)"
command -v kubectl >/dev/null || fail "kubectl is required (the rig's up.sh uses it too)"
command -v curl >/dev/null || fail "curl is required"

# A cluster directory whose recorded processes are all gone is what an
# interrupted run (a killed job, a restarted machine) leaves behind: clear it
# with down.sh. One with a live process belongs to another run: leave it.
if [ -e "$RK8S_CACHE/cluster" ]; then
	if live=$(cluster_live_pid); then
		fail "a cluster is up already ($RK8S_CACHE/cluster, $live is running): another run? stop it with $RIG/down.sh first"
	fi
	phase "stale cluster state (no recorded process alive): down.sh"
	bash "$RIG/down.sh" >"$TMP/stale-down.log" 2>&1 || {
		cat "$TMP/stale-down.log" >&2
		fail "down.sh could not clear the stale state in $RK8S_CACHE/cluster"
	}
	[ ! -e "$RK8S_CACHE/cluster" ] || fail "down.sh left $RK8S_CACHE/cluster behind"
fi

phase "tools (helm)"
HELM=$(tools_helm)

phase "rig build (only if missing)"
tools_rig "$RIG"

phase "up.sh $NODES"
UP_STARTED=1
bash "$RIG/up.sh" "$NODES" >"$TMP/up.log" 2>&1 || {
	cat "$TMP/up.log" >&2
	fail "up.sh $NODES failed"
}
mapfile -t NODE_NAMES < <(kc get nodes -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort)
[ "${#NODE_NAMES[@]}" = "$NODES" ] || fail "expected $NODES nodes, found: ${NODE_NAMES[*]}"
log "nodes: ${NODE_NAMES[*]}"

phase "image (scripts/image.sh)"
scripts/image.sh "$TMP/rperf3.tar" "$IMAGE" || fail "scripts/image.sh failed"

phase "load-image.sh"
# Right after up.sh a node's containerd can still miss an image it just
# imported ("not present on nI after import", seen once by hand): one more try.
if ! bash "$RIG/load-image.sh" "$TMP/rperf3.tar" "$IMAGE" >"$TMP/load.log" 2>&1; then
	log "load-image.sh failed once ($(tail -n 1 "$TMP/load.log")): trying again"
	bash "$RIG/load-image.sh" "$TMP/rperf3.tar" "$IMAGE" >"$TMP/load.log" 2>&1 || {
		cat "$TMP/load.log" >&2
		fail "load-image.sh failed"
	}
fi

phase "helm install (until all pods Ready)"
"$HELM" install "$RELEASE" "$CHART" --kubeconfig "$RK8S_CACHE/kubeconfig" --namespace "$NS" --create-namespace \
	--set image.repository="${IMAGE%:*}" --set image.tag="${IMAGE##*:}" --set image.pullPolicy=Never \
	--set mesh.time="$TEST_SECS" --set mesh.slot="$SLOT_SECS" --set mesh.period=0 --set mesh.json=true \
	--wait --timeout 120s >"$TMP/helm.log" 2>&1 || {
	cat "$TMP/helm.log" >&2
	fail "helm install failed"
}
# helm's --wait counts a DaemonSet ready with maxUnavailable pods still unready
all_agents_ready() { [ "$(agents | wc -l)" = "$NODES" ]; }
wait_until 60 "all $NODES agent pods are Ready" all_agents_ready
# the ServiceAccount may read EndpointSlices in its namespace, and nothing else
sa="system:serviceaccount:$NS:$RELEASE"
[ "$(kc auth can-i list endpointslices.discovery.k8s.io -n "$NS" --as "$sa")" = yes ] ||
	fail "the agents' ServiceAccount cannot list EndpointSlices"
for probe in "list pods -n $NS" "list endpointslices.discovery.k8s.io -n default" "create endpointslices.discovery.k8s.io -n $NS"; do
	# shellcheck disable=SC2086
	[ "$(kc auth can-i $probe --as "$sa" 2>/dev/null || true)" = no ] || fail "the agents' ServiceAccount may $probe"
done
agents | sed 's/^/  agent /'

phase "(a) a full cycle with all 6 pairs"
wait_until 120 "every agent has all $NODES members, a completed cycle and all $((NODES * (NODES - 1))) pairs measured" \
	all_pairs_measured
series rperf3_mesh_throughput_bits_per_second | while read -r _ s d v; do
	awk -v s="$s" -v d="$d" -v v="$v" -v rpm="$(value "$s" "$d" rperf3_mesh_rpm)" \
		-v p50="$(value "$s" "$d" rperf3_mesh_loaded_latency_seconds 'quantile="0.5"')" \
		'BEGIN { printf "  %s -> %s  %6.2f Gbit/s  loaded p50 %.3f ms  %d RPM\n", s, d, v / 1e9, p50 * 1000, rpm }'
done
# -J: one JSON document per test on each agent's standard output
for p in $(kc -n "$NS" get pods -l "app.kubernetes.io/instance=$RELEASE" -o name); do
	kc -n "$NS" logs "$p" >"$TMP/log" || fail "kubectl logs $p failed"
	grep -q '^{"source":"n[0-9]*","destination":"n[0-9]*",.*"outcome":"ok"' "$TMP/log" ||
		fail "no JSON test line (-J) with outcome ok in the log of $p"
done

phase "(b) a deleted agent pod comes back"
read -r old_pod _ _ old_uid < <(agents | awk -v n="$VICTIM_POD_NODE" '$2 == n')
[ -n "${old_pod:-}" ] || fail "no agent pod on $VICTIM_POD_NODE"
# the pairs from and to the node: their last success before the deletion
scrape || fail "scrape before the deletion"
declare -A BEFORE
for n in "${NODE_NAMES[@]}"; do
	[ "$n" != "$VICTIM_POD_NODE" ] || continue
	for pair in "$VICTIM_POD_NODE $n" "$n $VICTIM_POD_NODE"; do
		# shellcheck disable=SC2086
		BEFORE[$pair]=$(value $pair rperf3_mesh_last_success_timestamp_seconds)
		[ -n "${BEFORE[$pair]}" ] || fail "no last success of $pair before the deletion"
	done
done
t_del=$(date +%s.%N)
kc -n "$NS" delete pod "$old_pod" --wait=true >/dev/null || fail "could not delete $old_pod"
log "deleted $old_pod on $VICTIM_POD_NODE at $t_del"
new_agent_ready() { agents | awk -v n="$VICTIM_POD_NODE" -v u="$old_uid" '$2 == n && $4 != u { f = 1 } END { exit !f }'; }
wait_until 60 "a new agent pod on $VICTIM_POD_NODE is Ready" new_agent_ready
log "  new: $(agents | awk -v n="$VICTIM_POD_NODE" '$2 == n { print $1, $3 }')"
wait_until 90 "the pairs from and to $VICTIM_POD_NODE have tests that ended after the deletion" \
	pairs_resumed "$VICTIM_POD_NODE" "$t_del"
for pair in "${!BEFORE[@]}"; do
	# shellcheck disable=SC2086
	after=$(value $pair rperf3_mesh_last_success_timestamp_seconds)
	gt "$after" "${BEFORE[$pair]}" || fail "$pair: last success $after is not newer than ${BEFORE[$pair]}"
	printf '  %s -> %s  last success %s -> %s\n' "${pair% *}" "${pair#* }" \
		"$(date -u -d "@${BEFORE[$pair]}" +%H:%M:%S.%3N)" "$(date -u -d "@$after" +%H:%M:%S.%3N)"
done

phase "(c) a removed node leaves the mesh"
REMAINING=()
for n in "${NODE_NAMES[@]}"; do [ "$n" = "$GONE_NODE" ] || REMAINING+=("$n"); done
kc taint node "$GONE_NODE" "$TAINT" >/dev/null || fail "could not taint $GONE_NODE"
wait_until 60 "the agent on $GONE_NODE is evicted and its endpoint left the Service" node_left "$GONE_NODE"
scrape || fail "scrape after the eviction"
for n in "${REMAINING[@]}"; do gauge "$n" rperf3_mesh_cycles_total >"$TMP/cycles.$n"; done
wait_until 60 "after their next cycle, the agents on ${REMAINING[*]} have 2 members and no series of $GONE_NODE" \
	node_series_gone "$GONE_NODE" "${REMAINING[@]}"
t_gone=$(date +%s.%N)
for n in "${REMAINING[@]}"; do gauge "$n" rperf3_mesh_cycles_total >"$TMP/cycles.$n"; done
still_gone_and_going_on() {
	node_series_gone "$GONE_NODE" "${REMAINING[@]}" || return 1
	local s d v
	for s in "${REMAINING[@]}"; do
		for d in "${REMAINING[@]}"; do
			[ "$s" != "$d" ] || continue
			v=$(value "$s" "$d" rperf3_mesh_last_success_timestamp_seconds)
			[ -n "$v" ] && gt "$v" "$t_gone" || return 1
		done
	done
}
wait_until 60 "a cycle later still none, and the pairs among ${REMAINING[*]} were tested again" \
	still_gone_and_going_on
end_phase
