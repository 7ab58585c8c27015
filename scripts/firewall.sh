#!/usr/bin/env bash
# The rules that keep a local stack's replicas off the platform (contract section 14: a replica
# reaches the internet and nothing of the platform). Every namespace network's bridge is named
# ahb… (dataplane/src/docker/network.rs); from those bridges:
#   - nothing reaches the host itself (DynamoDB Local, moto, the gateway, the functions, Docker's
#     other bridges' gateways: any of its addresses), but the answers to the host's own
#     connections (the data plane asking a replica's holder and its /readyz);
#   - nothing reaches a link-local address through the host (169.254.169.254: a cloud's
#     metadata service and its credentials).
# Replica to replica is Docker's: inter-container traffic off on each bridge, and its isolation
# chains between bridges.
#
#   scripts/firewall.sh add TAG      install the rules, each marked with the comment TAG
#   scripts/firewall.sh remove TAG   remove every rule marked TAG (none is not an error)
#
# Each stack marks its rules with its own TAG, so two stacks' rules come and go apart.
set -euo pipefail

action=${1:?usage: firewall.sh add|remove TAG}
tag=${2:?usage: firewall.sh add|remove TAG}
case "$tag" in *[!A-Za-z0-9:._-]*) echo "firewall.sh: a TAG of letters, digits and :._- only" >&2; exit 2 ;; esac

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}
ipt() { as_root iptables -w 10 "$@"; }

remove() {
  local chain rule
  for chain in INPUT DOCKER-USER; do
    ipt -S "$chain" >/dev/null 2>&1 || continue
    # iptables -S prints each rule as the arguments that append it, quoted as a shell reads
    # them; deleting takes the same (the TAG's characters are checked above).
    while read -r rule; do
      eval "ipt -D ${rule#-A }" || true
    done < <(ipt -S "$chain" | grep -F -- "--comment \"$tag\" " || true)
  done
}

case "$action" in
  add)
    remove
    # DOCKER-USER is the Engine's chain for rules of its users, run before its own forwarding.
    ipt -S DOCKER-USER >/dev/null 2>&1 || { echo "firewall.sh: no DOCKER-USER chain (is dockerd running?)" >&2; exit 1; }
    ipt -I INPUT -i 'ahb+' -m comment --comment "$tag" -j DROP
    ipt -I INPUT -i 'ahb+' -m conntrack --ctstate ESTABLISHED,RELATED -m comment --comment "$tag" -j ACCEPT
    ipt -I DOCKER-USER -i 'ahb+' -d 169.254.0.0/16 -m comment --comment "$tag" -j DROP
    ;;
  remove) remove ;;
  *) echo "usage: firewall.sh add|remove TAG" >&2; exit 2 ;;
esac
