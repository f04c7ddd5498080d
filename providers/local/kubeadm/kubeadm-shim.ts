import { join } from 'node:path';
import { certificateFollows } from './join-service';

/**
 * The `kubeadm` a machine finds on its PATH (/run/capt/bin). `init` and control-plane joins run
 * kubeadm-main.js on the machine; a worker's join is asked of the cluster agent at `agent` (join-service.ts)
 * over bash's /dev/tcp, and the registration it answers is written to the machine's /var/lib/kubelet, so a
 * worker boots without starting a node process; the kubelet's client certificate, which follows, is written there
 * in the background. An agent that does not answer is retried for two minutes.
 */
export function kubeadmShim(agent: { host: string; port: number }): string {
  const main = `exec "${process.execPath}" "${join(__dirname, 'kubeadm-main.js')}" "$@"`;
  return `#!/bin/bash
config=
for ((i = 1; i < $#; i++)); do
  if [ "\${!i}" = --config ]; then j=$((i + 1)); config=\${!j}; fi
done
if [ "$1" != join ] || [[ " $* " == *" --control-plane "* ]] || [ ! -r "$config" ]; then
  ${main}
fi
for ((try = 0; ; try++)); do
  if { exec 3<>/dev/tcp/${agent.host}/${agent.port}; } 2>/dev/null; then
    printf '%s\\0' "$#" "$@" "$(< /run/capt/metadata.json)" "$(< "$config")" >&3
    IFS= read -r code <&3 && break
    exec 3<&-
  fi
  if ((try >= 120)); then echo "kubeadm: the cluster agent at ${agent.host}:${agent.port} does not answer" >&2; exit 1; fi
  sleep 1
done
IFS= read -r kubelet <&3
out=2
if [ "$code" = 0 ]; then
  [ -d /var/lib/kubelet ] || mkdir -p /var/lib/kubelet || exit 1
  printf '%s\\n' "$kubelet" > /var/lib/kubelet/config.json || exit 1
  out=1
fi
while IFS= read -r line; do
  if [ "$code" = 0 ] && [ "$line" = ${certificateFollows} ]; then
    # The kubelet's client certificate comes once the cluster signed it: kept in the background, the boot goes on.
    ( IFS= read -r cert
      case "$cert" in
        'kubelet-client '*) mkdir -p /var/lib/kubelet/pki &&
          (umask 077 && printf '%s' "\${cert#kubelet-client }" | base64 -d > /var/lib/kubelet/pki/kubelet-client-current.pem) ;;
        *) echo "kubeadm: no kubelet client certificate: \${cert#kubelet-client-failed }" >&2 ;;
      esac ) <&3 >/dev/null 2>>/var/log/capt-kubelet-bootstrap.log &
    break
  fi
  printf '%s\\n' "$line" >&$out
done <&3
exit "$code"
`;
}
