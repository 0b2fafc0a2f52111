# A fleet of nodes in network namespaces on one bridge, for the mesh scripts.
# Source it, set FLEET_ID (a unique prefix), then: fleet_up N; node i is
# namespace "$FLEET_ID-n$i" at $(fleet_ip i), plugged into bridge port p$i in
# "$FLEET_ID-br". fleet_down (run it from an EXIT trap) kills what runs
# inside and deletes every namespace. Needs root and ip.

fleet_ip() { echo "10.96.$(( $1 / 250 )).$(( $1 % 250 + 1 ))"; }

fleet_up() {
  local n=$1 i ns
  ip netns add "$FLEET_ID-br"
  ip -n "$FLEET_ID-br" link add br0 type bridge
  ip -n "$FLEET_ID-br" link set br0 up
  for i in $(seq 1 "$n"); do
    ns="$FLEET_ID-n$i"
    ip netns add "$ns"
    ip -n "$FLEET_ID-br" link add "p$i" type veth peer name veth0 netns "$ns"
    ip -n "$FLEET_ID-br" link set "p$i" master br0 up
    ip -n "$ns" addr add "$(fleet_ip "$i")/16" dev veth0
    ip -n "$ns" link set lo up
    ip -n "$ns" link set veth0 up
  done
}

fleet_down() {
  local ns pid
  for ns in $(ip netns list | awk '{print $1}' | grep "^$FLEET_ID-" || true); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
}

# fleet_agents N TAG DIR PEERS ARGS...: starts agent i in node i with
# --name n$i -B its address --metrics its address:9464 and ARGS; its stdout
# and stderr in DIR/TAG-out$i and DIR/TAG-err$i.
fleet_agents() {
  local n=$1 tag=$2 dir=$3 peers=$4 i
  shift 4
  for i in $(seq 1 "$n"); do
    ip netns exec "$FLEET_ID-n$i" "$BIN" mesh --name "n$i" --peers "$peers" -B "$(fleet_ip "$i")" \
      --metrics "$(fleet_ip "$i"):9464" "$@" > "$dir/$tag-out$i" 2> "$dir/$tag-err$i" &
  done
}
