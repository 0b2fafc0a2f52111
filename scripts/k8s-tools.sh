#!/usr/bin/env bash
# k8s-tools.sh - the tools that check and install the Helm chart, built or
# fetched once into a cache outside the repository:
#
#   helm          helm.sh/helm/v3 $HELM_VERSION, built from the Go module proxy
#   kubeconform   github.com/yannh/kubeconform $KUBECONFORM_VERSION, likewise
#   k8s-schemas   the Kubernetes $K8S_SCHEMA_VERSION JSON schemas that the PyPI
#                 package kubernetes-validate==$KUBERNETES_VALIDATE_VERSION ships
#
# Sourced by chart-check.sh and k8s-e2e.sh (then call tools_helm,
# tools_kubeconform, tools_schemas: each prints the path); run alone it makes
# all three and prints their paths and versions.
#
# Environment:
#   RPERF3_TOOLS  cache directory (default /var/cache/rperf3-tools)
#   RK8S_CACHE    the k8s rig's cache; its Go module and build caches
#                 (gomod/, gocache/) are shared, as helm, kubeconform and the
#                 rig's Kubernetes build have modules in common
#                 (default /var/cache/rperf3-k8s)
# shellcheck shell=bash

HELM_VERSION=${HELM_VERSION:-v3.22.0}
KUBECONFORM_VERSION=${KUBECONFORM_VERSION:-v0.8.0}
KUBERNETES_VALIDATE_VERSION=${KUBERNETES_VALIDATE_VERSION:-1.37.0}
# The schemas of the Kubernetes minor version the rig runs (1.34.x).
K8S_SCHEMA_VERSION=${K8S_SCHEMA_VERSION:-1.34.0}
RPERF3_TOOLS=${RPERF3_TOOLS:-/var/cache/rperf3-tools}
RK8S_CACHE=${RK8S_CACHE:-/var/cache/rperf3-k8s}

tools_log() { printf '[tools %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
tools_die() {
	printf '[tools] error: %s\n' "$*" >&2
	exit 1
}

# The Go toolchain, also where the machine keeps it off PATH.
tools_go() {
	if command -v go >/dev/null 2>&1; then
		command -v go
	elif [ -x /usr/local/go/bin/go ]; then
		echo /usr/local/go/bin/go
	else
		tools_die "go is required to build helm and kubeconform (not on PATH, not in /usr/local/go/bin)"
	fi
}

# tools_go_install NAME PACKAGE@VERSION LDFLAGS: build NAME into
# $RPERF3_TOOLS/bin unless that very version is there already.
tools_go_install() {
	local name=$1 pkg=$2 ldflags=$3 bin=$RPERF3_TOOLS/bin go t0 log
	if [ -x "$bin/$name" ] && [ "$(cat "$bin/$name.version" 2>/dev/null)" = "$pkg" ]; then
		echo "$bin/$name"
		return 0
	fi
	go=$(tools_go)
	mkdir -p "$bin" "$RK8S_CACHE/gomod" "$RK8S_CACHE/gocache"
	log=$RPERF3_TOOLS/$name.build.log
	tools_log "building $pkg with $("$go" version | awk '{print $3}') (log: $log)"
	t0=$(date +%s)
	rm -rf "$bin/.$name.tmp"
	mkdir -p "$bin/.$name.tmp"
	if ! (cd / && GOBIN="$bin/.$name.tmp" GOMODCACHE="$RK8S_CACHE/gomod" GOCACHE="$RK8S_CACHE/gocache" \
		GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOTOOLCHAIN=local \
		nice -n 10 "$go" install -trimpath -ldflags "$ldflags" "$pkg") >"$log" 2>&1; then
		tail -n 30 "$log" >&2
		tools_die "building $pkg failed (log: $log)"
	fi
	mv -f "$bin/.$name.tmp/$name" "$bin/$name"
	rmdir "$bin/.$name.tmp"
	echo "$pkg" >"$bin/$name.version"
	tools_log "built $bin/$name in $(($(date +%s) - t0))s"
	echo "$bin/$name"
}

tools_helm() {
	# As helm's own release build: the version, and the Kubernetes version of
	# its client libraries (v0.37 -> 1.37) for default capabilities; the
	# chart checks pass --kube-version for the cluster they target.
	local ld="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
	ld+=" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=37"
	ld+=" -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=37"
	tools_go_install helm "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" "$ld"
}

tools_kubeconform() {
	tools_go_install kubeconform "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION" \
		"-s -w -X main.version=$KUBECONFORM_VERSION"
}

# The directory that holds v$K8S_SCHEMA_VERSION-local-strict/; kubeconform
# takes -schema-location "DIR/v$K8S_SCHEMA_VERSION-local{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json".
#
# kubernetes-validate keeps them in its wheel under
# kubernetes_validate/kubernetes-json-schema/vX.Y.0-local[-strict]/, one file
# per kind (daemonset-apps-v1.json, service-v1.json, role-rbac-v1.json: the
# names kubeconform's template makes) plus _definitions.json. Each file has
# an "$id" under https://kubernetes.io/api/ and refers to the definitions as
# "/api/_definitions.json#/$defs/...", which kubernetes-validate maps in
# memory; kubeconform would resolve them against kubernetes.io and fetch
# over the network. So the copy here drops the "$id"s and points the
# references at the _definitions.json beside each file.
tools_schemas() {
	local dir=$RPERF3_TOOLS/k8s-schemas stamp want sub tmp py
	want="kubernetes-validate==$KUBERNETES_VALIDATE_VERSION v$K8S_SCHEMA_VERSION"
	stamp=$dir/.version
	sub="v$K8S_SCHEMA_VERSION-local-strict"
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$dir/$sub/_definitions.json" ]; then
		echo "$dir"
		return 0
	fi
	py=$(command -v python3) || tools_die "python3 is required for the Kubernetes schemas"
	"$py" -m pip --version >/dev/null 2>&1 || tools_die "pip is required to download kubernetes-validate (python3 -m pip)"
	tools_log "downloading kubernetes-validate==$KUBERNETES_VALIDATE_VERSION from PyPI for the $sub schemas"
	tmp=$(mktemp -d)
	if ! "$py" -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" \
		"kubernetes-validate==$KUBERNETES_VALIDATE_VERSION" >&2; then
		rm -rf "$tmp"
		tools_die "pip download kubernetes-validate==$KUBERNETES_VALIDATE_VERSION failed"
	fi
	rm -rf "$dir.tmp"
	mkdir -p "$dir.tmp/$sub"
	if ! "$py" - "$tmp"/kubernetes_validate-*.whl "kubernetes_validate/kubernetes-json-schema/$sub/" "$dir.tmp/$sub" <<'EOF'; then
import json, sys, zipfile

wheel, prefix, out = sys.argv[1:4]
REMOTE = "/api/_definitions.json"

def local(node):
    if isinstance(node, dict):
        return {k: (("_definitions.json" + v[len(REMOTE):]) if k == "$ref" and isinstance(v, str)
                    and v.startswith(REMOTE) else local(v))
                for k, v in node.items()}
    if isinstance(node, list):
        return [local(v) for v in node]
    return node

n = 0
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if not name.startswith(prefix) or not name.endswith(".json"):
            continue
        schema = json.loads(z.read(name))
        schema.pop("$id", None)
        with open(f"{out}/{name[len(prefix):]}", "w") as f:
            json.dump(local(schema), f, separators=(",", ":"))
        n += 1
if n < 100 or REMOTE in open(f"{out}/daemonset-apps-v1.json").read():
    sys.exit(f"{wheel}: only {n} schemas under {prefix}, or references left unmapped")
print(n, file=sys.stderr)
EOF
		rm -rf "$tmp" "$dir.tmp"
		tools_die "could not extract the $sub schemas from kubernetes-validate"
	fi
	rm -rf "$tmp" "$dir"
	echo "$want" >"$dir.tmp/.version"
	mv "$dir.tmp" "$dir"
	tools_log "schemas in $dir/$sub ($(find "$dir/$sub" -name '*.json' | wc -l) files)"
	echo "$dir"
}

# tools_rig RIG_DIR: builds the Kubernetes rig (its build.sh, which also
# installs its Debian packages) unless its cache and packages are complete.
tools_rig() {
	local rig=$1 missing="" f c
	for f in bin/kube-apiserver bin/kube-controller-manager bin/kube-scheduler bin/kubelet bin/kube-proxy \
		bin/etcd images/pause.tar images/busybox.tar; do
		[ -s "$RK8S_CACHE/$f" ] || missing+=" $f"
	done
	for c in containerd runc ctr conntrack; do
		command -v "$c" >/dev/null || missing+=" $c"
	done
	if [ -z "$missing" ]; then
		tools_log "the rig's cache is complete ($RK8S_CACHE)"
		return 0
	fi
	[ -f "$rig/build.sh" ] || tools_die "the Kubernetes rig is not at $rig"
	tools_log "the rig lacks$missing: running $rig/build.sh (several minutes when it compiles)"
	bash "$rig/build.sh" >&2 || tools_die "the rig's build.sh failed"
}

# Run alone: the three tools; with --rig DIR, the rig too (what .ci/run
# starts in the background while the Rust tests run).
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -euo pipefail
	if [ "${1:-}" = "--rig" ]; then
		tools_rig "${2:?--rig needs the rig directory}"
	fi
	h=$(tools_helm)
	k=$(tools_kubeconform)
	s=$(tools_schemas)
	echo "helm         $h ($("$h" version --short))"
	echo "kubeconform  $k ($("$k" -v))"
	echo "schemas      $s/v$K8S_SCHEMA_VERSION-local-strict ($(cat "$s/.version"))"
fi
