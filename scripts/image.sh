#!/usr/bin/env bash
# image.sh OUT.tar [NAME:TAG] - a container image of rperf3, FROM scratch,
# written as a docker-archive (no registry, no daemon: buildah).
#
#   scripts/image.sh /tmp/rperf3.tar                      # localhost/rperf3:<version>
#   scripts/image.sh /tmp/rperf3.tar localhost/rperf3:dev
#   ../shared/k8s/load-image.sh /tmp/rperf3.tar localhost/rperf3:dev   # into the rig
#
# The image holds the release binary (target/release/rperf3, built with cargo
# if missing; RPERF3_BIN names another), its debug info stripped, and the
# shared libraries it links (from ldd, at their paths, the loader too), so
# the glibc build needs no second, static build. Also /etc/passwd and
# /etc/group with nobody, and /tmp. Entrypoint: the binary; default command
# -s (a server); user 65534 (nobody). Needs root and buildah (Debian's).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[image %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() {
	printf '[image] error: %s\n' "$*" >&2
	exit 1
}

if [ $# -lt 1 ] || [ $# -gt 2 ]; then die "usage: scripts/image.sh OUT.tar [NAME:TAG]"; fi
OUT=$1
VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
[ -n "$VERSION" ] || die "no version in Cargo.toml"
NAME=${2:-localhost/rperf3:$VERSION}
case "$NAME" in *:*) ;; *) NAME=$NAME:$VERSION ;; esac
[ "$(id -u)" = 0 ] || die "must run as root (buildah with its own storage)"
command -v buildah >/dev/null || die "buildah is required (apt-get install buildah)"
command -v ldd >/dev/null || die "ldd is required"
command -v strip >/dev/null || die "strip is required (binutils)"

BIN=${RPERF3_BIN:-target/release/rperf3}
if [ ! -x "$BIN" ]; then
	[ -z "${RPERF3_BIN:-}" ] || die "RPERF3_BIN=$RPERF3_BIN is not an executable"
	log "no $BIN: cargo build --release"
	cargo build --release --locked --bin rperf3
fi
"$BIN" --version >/dev/null || die "$BIN does not run"

T0=$(date +%s.%N)
WORK=$(mktemp -d)
# buildah's storage is this run's own, removed with it: nothing is left in
# the machine's image store.
BUILDAH=(buildah --root "$WORK/storage" --runroot "$WORK/run" --storage-driver vfs)
ctr=""
cleanup() {
	[ -z "$ctr" ] || "${BUILDAH[@]}" rm "$ctr" >/dev/null 2>&1 || true
	"${BUILDAH[@]}" rmi --all --force >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap cleanup EXIT

ROOT=$WORK/rootfs
mkdir -p "$ROOT/etc" "$ROOT/tmp"
chmod 1777 "$ROOT/tmp"
strip --strip-debug -o "$ROOT/rperf3" "$BIN"
# Each library at the path ldd found it (the loader: the path the binary
# names as its interpreter), as a file rather than a symlink.
libs=0
while read -r lib; do
	[ -n "$lib" ] || continue
	mkdir -p "$ROOT$(dirname "$lib")"
	cp -L "$lib" "$ROOT$lib"
	libs=$((libs + 1))
done < <(ldd "$BIN" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
[ "$libs" -ge 2 ] || die "ldd found no libraries for $BIN (is it a dynamic executable?)"
interp=$(readelf -l "$BIN" 2>/dev/null | sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p')
[ -z "$interp" ] || [ -f "$ROOT$interp" ] || die "the loader $interp is missing from the image"
printf 'root:x:0:0:root:/:/rperf3\nnobody:x:65534:65534:nobody:/:/rperf3\n' >"$ROOT/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$ROOT/etc/group"

ctr=$("${BUILDAH[@]}" from scratch)
"${BUILDAH[@]}" copy "$ctr" "$ROOT" / >/dev/null
"${BUILDAH[@]}" config --os linux --arch amd64 \
	--entrypoint '["/rperf3"]' --cmd '["-s"]' --user 65534:65534 --workingdir / \
	--port 5201/tcp --port 5201/udp --port 9464/tcp \
	--label org.opencontainers.image.title=rperf3 \
	--label org.opencontainers.image.description="rperf3: an iperf3-compatible network tester; rperf3 mesh is its fleet agent" \
	--label org.opencontainers.image.version="$VERSION" \
	--label org.opencontainers.image.licenses=BSD-3-Clause \
	"$ctr"
"${BUILDAH[@]}" commit --quiet --rm --format docker "$ctr" "$NAME" >/dev/null
# Does it run, as the user it will run as, with nothing but what is in the
# image? (In a container of its own: a run leaves mount points behind.)
ctr=$("${BUILDAH[@]}" from "$NAME")
out=$("${BUILDAH[@]}" run --isolation chroot "$ctr" -- /rperf3 --version 2>&1) ||
	die "the image's binary does not run: $out"
case "$out" in "rperf3 $VERSION"*) ;; *) die "unexpected --version from the image: $out" ;; esac
"${BUILDAH[@]}" rm "$ctr" >/dev/null
ctr=""
mkdir -p "$(dirname "$OUT")"
rm -f "$OUT.tmp"
"${BUILDAH[@]}" push --quiet "$NAME" "docker-archive:$OUT.tmp:$NAME"
mv -f "$OUT.tmp" "$OUT"
log "$NAME -> $OUT ($(du -h "$OUT" | cut -f1), binary $(du -h "$ROOT/rperf3" | cut -f1) + $((libs)) libraries;" \
	"'${out%%$'\n'*}') in $(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')s"
