#!/usr/bin/env bash
# make test-cluster: a real single-node Kubernetes on this machine, the chart
# installed on it and driven as an operator would (tests/cluster), then
# everything it made removed again. See docs/kubernetes.md.
#
#   scripts/cluster.sh          up, test, down (down also runs on failure)
#   scripts/cluster.sh up       build what is missing and start the cluster
#   scripts/cluster.sh test     the scenario against a running cluster
#                               (CLUSTER_TEST_ARGS: more go test flags, e.g.
#                               -run 'TestCluster/(install|balance)' with
#                               CLUSTER_BALANCE_ROUNDS=2 for the A/B of the
#                               gateway's balance modes)
#   scripts/cluster.sh down     stop and remove everything up made; fails when
#                               a process, mount, bridge or chain is left
#   scripts/cluster.sh env      print the exports to use kubectl/helm by hand
#
# Kubernetes is built from its Go modules (tools/cluster/k8s pins the release),
# CoreDNS, helm and metrics-server with go install; containerd, runc, the bridge
# CNI plugin, etcd, iptables and buildah come from Debian. Builds are cached in
# CLUSTER_CACHE; the cluster's state lives in CLUSTER_DIR and goes with down.
# Nothing listens beyond the bridge (10.244.0.1) and loopback; PostgreSQL,
# Redis and Temporal are private instances, never the machine's own.
# When this machine cannot run containers at all, it says why and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

K8S_VERSION=v1.37.2
COREDNS_VERSION=v1.14.7
HELM_VERSION=v3.22.0
METRICS_SERVER_VERSION=v0.8.0
# The NetworkPolicy enforcer: kube-router's firewall alone (iptables + ipset).
# The SIG's kube-network-policies was the first choice; this kernel has no
# nftables queue expression, which it needs (docs/kubernetes.md).
KUBE_ROUTER_VERSION=v2.1.0
# The pause container's source ships in the kubernetes module.
PAUSE_IMAGE=registry.k8s.io/pause:3.10-coworkjobs

CACHE=${CLUSTER_CACHE:-$HOME/.cache/coworkjobs-cluster}
D=${CLUSTER_DIR:-/tmp/coworkjobs-cluster}
BRIDGE=cwj0
NODE=cwj-node
NODE_IP=10.244.0.1
POD_CIDR=10.244.0.0/24
SVC_CIDR=10.96.0.0/16
APISERVER=https://$NODE_IP:6443
PG_PORT=25432
REDIS_PORT=26379
TEMPORAL_PORT=27233 # the dev server, on loopback (it dials itself there)
TEMPORAL_FWD=7233   # what pods dial on the bridge address
IMAGE_TAG=${CLUSTER_IMAGE_TAG:-cluster}
SERVICES=(gateway jobs directory content community)

BIN=$CACHE/bin/$K8S_VERSION
export PATH="$BIN:$CACHE/bin:$PATH"
export KUBECONFIG=$D/pki/admin.kubeconfig

log() { printf 'cluster: %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

# --- can this machine run containers? ----------------------------------------
cannot_run() {
  [ "$(id -u)" = 0 ] || { echo "not root (containerd, kubelet and the bridge need it)"; return; }
  grep -qw overlay /proc/filesystems || { echo "no overlay filesystem in this kernel"; return; }
  for c in memory cpu pids; do
    [ -d "/sys/fs/cgroup/$c" ] || [ -f /sys/fs/cgroup/cgroup.controllers ] || { echo "no $c cgroup controller mounted"; return; }
  done
  [ -d /proc/sys/net/bridge ] || { echo "no bridge netfilter (br_netfilter) in this kernel: services cannot reach pods on one bridge"; return; }
  unshare --mount --net --pid --fork true 2>/dev/null || { echo "cannot create mount/network/pid namespaces (unshare failed)"; return; }
}

install_packages() {
  local missing=()
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
  command -v etcd >/dev/null || missing+=(etcd-server)
  command -v iptables >/dev/null || missing+=(iptables)
  command -v conntrack >/dev/null || missing+=(conntrack)
  command -v buildah >/dev/null || missing+=(buildah)
  command -v socat >/dev/null || missing+=(socat)
  command -v ipset >/dev/null || missing+=(ipset)
  command -v gcc >/dev/null || missing+=(gcc libc6-dev)
  command -v openssl >/dev/null || missing+=(openssl)
  command -v curl >/dev/null || missing+=(curl)
  [ -x /bin/busybox ] || missing+=(busybox-static)
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]} (Debian)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# --- builds (cached) -----------------------------------------------------------
build_tools() {
  mkdir -p "$BIN"
  local cmds=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl) want=()
  for c in "${cmds[@]}"; do [ -x "$BIN/$c" ] || want+=("k8s.io/kubernetes/cmd/$c"); done
  if [ ${#want[@]} -gt 0 ]; then
    log "building Kubernetes $K8S_VERSION (${#want[@]} commands; ~25 min cold on 2 cores, then cached)"
    # The version stamps Kubernetes' own build sets (hack/lib/version.sh):
    # without them every component says v0.0.0 and charts' kubeVersion checks fail.
    local minor=${K8S_VERSION#v1.} v ldflags="-s -w"
    minor=${minor%%.*}
    for v in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ldflags+=" -X $v.gitVersion=$K8S_VERSION -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean"
    done
    (cd tools/cluster/k8s && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 \
      go build -trimpath -ldflags="$ldflags" -o "$BIN/" "${want[@]}")
  fi
  go_tool coredns "$COREDNS_VERSION" github.com/coredns/coredns
  go_tool helm "$HELM_VERSION" helm.sh/helm/v3/cmd/helm
  go_tool metrics-server "$METRICS_SERVER_VERSION" sigs.k8s.io/metrics-server/cmd/metrics-server
  go_tool kube-router "$KUBE_ROUTER_VERSION" github.com/cloudnativelabs/kube-router/v2/cmd/kube-router
  ln -sf "helm-$HELM_VERSION" "$CACHE/bin/helm"
  if [ ! -x "$CACHE/pause" ]; then
    local src
    src=$(cd tools/cluster/k8s && GOWORK=off go list -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause/linux/pause.c
    gcc -Os -static -o "$CACHE/pause" -DVERSION=3.10-coworkjobs "$src"
  fi
}

# go_tool NAME VERSION PACKAGE: go install PACKAGE@VERSION once, kept as
# CACHE/bin/NAME-VERSION (a version bump builds the new one beside it).
go_tool() {
  local name=$1 version=$2 pkg=$3
  [ -x "$CACHE/bin/$name-$version" ] && return 0
  log "building $name $version"
  rm -rf "$CACHE/gobin"
  GOWORK=off CGO_ENABLED=0 GOBIN=$CACHE/gobin go install -trimpath -ldflags="-s -w" "$pkg@$version"
  mv "$CACHE/gobin/$(basename "$pkg")" "$CACHE/bin/$name-$version"
}

# The services' static binaries, as the Dockerfile builds them.
build_services() {
  log "building the services"
  local s
  for s in "${SERVICES[@]}"; do
    rm -rf "$D/images/$s" && mkdir -p "$D/images/$s/app"
    (cd "services/$s" && CGO_ENABLED=0 go build -trimpath -tags=grpcnotrace -ldflags="-s -w -X main.version=$IMAGE_TAG" -o "$D/images/$s/app/" ./cmd/...)
  done
}

# --- images: FROM scratch with buildah (no registry), imported into containerd --
buildah_() { buildah --root "$D/buildah/root" --runroot "$D/buildah/run" --storage-driver vfs "$@"; }

# image NAME DIR USER ENTRYPOINT-JSON: DIR's tree plus CA certificates.
image() {
  local name=$1 dir=$2 user=$3 entry=$4 ctr
  ctr=$(buildah_ from scratch)
  buildah_ copy --quiet "$ctr" "$dir" / >/dev/null
  buildah_ copy --quiet "$ctr" /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt >/dev/null
  buildah_ config --user "$user" --entrypoint "$entry" "$ctr"
  buildah_ commit --quiet --format docker "$ctr" "docker-archive:$D/images/$(basename "$dir").tar:$name" >/dev/null
  buildah_ rm "$ctr" >/dev/null
  ctr_ images import "$D/images/$(basename "$dir").tar" >/dev/null
}

ctr_() { ctr --address "$D/containerd/containerd.sock" -n k8s.io "$@"; }

build_images() {
  log "building images (FROM scratch) and importing them into containerd"
  mkdir -p "$D/images/pause-root" "$D/images/tools-root"/{bin,etc,tmp}
  cp "$CACHE/pause" "$D/images/pause-root/pause"
  image "$PAUSE_IMAGE" "$D/images/pause-root" 65535 '["/pause"]'
  local s
  for s in "${SERVICES[@]}"; do
    image "docker.io/coworkjobs/$s:$IMAGE_TAG" "$D/images/$s" 65532 "[\"/app/$s\"]"
  done
  # helm test's image: a shell and curl. busybox-static gives the shell; curl
  # comes with the shared libraries it links (no registry to pull one from).
  local t=$D/images/tools-root lib
  cp /bin/busybox "$t/bin/busybox"
  for lib in sh tr grep cut head tail sed printf sleep echo cat; do ln -sf busybox "$t/bin/$lib"; done
  cp /usr/bin/curl "$t/bin/curl"
  for lib in $(ldd /usr/bin/curl | grep -oE '/[^ ]+'); do
    mkdir -p "$t$(dirname "$lib")" && cp -L "$lib" "$t$lib"
  done
  image "docker.io/coworkjobs/cluster-tools:$IMAGE_TAG" "$t" 65532 '["/bin/sh"]'
}

# --- processes -----------------------------------------------------------------
# start NAME CMD...: in its own session, output to log/NAME.log, pid kept.
start() {
  local name=$1; shift
  setsid "$@" >"$D/log/$name.log" 2>&1 < /dev/null &
  echo $! >"$D/run/$name.pid"
}

stop_pid() {
  local name=$1 pid
  [ -f "$D/run/$name.pid" ] || return 0
  pid=$(cat "$D/run/$name.pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    # etcd 3.4's apiserver clients can hold the apiserver up: SIGKILL then
    # (only while it lives: an ended pid may be reused).
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
  fi
  rm -f "$D/run/$name.pid"
}

wait_for() { # wait_for SECONDS WHAT CMD...
  local secs=$1 what=$2; shift 2
  for _ in $(seq 1 "$((secs * 2))"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
  die "$what did not come up in ${secs}s"
}

# --- certificates --------------------------------------------------------------
cert() { # cert NAME CN O [SAN]: signed by the cluster CA
  local name=$1 cn=$2 o=$3 san=${4:-}
  openssl genrsa -out "$D/pki/$name.key" 2048 2>/dev/null
  openssl req -new -key "$D/pki/$name.key" -subj "/CN=$cn${o:+/O=$o}" -out "$D/pki/$name.csr" 2>/dev/null
  local ext=$D/pki/$name.ext
  { echo "basicConstraints=CA:FALSE"; echo "keyUsage=digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=serverAuth,clientAuth"; [ -n "$san" ] && echo "subjectAltName=$san"; } >"$ext"
  openssl x509 -req -in "$D/pki/$name.csr" -CA "$D/pki/ca.crt" -CAkey "$D/pki/ca.key" -CAcreateserial \
    -days 2 -extfile "$ext" -out "$D/pki/$name.crt" 2>/dev/null
}

kubeconfig() { # kubeconfig NAME: a kubeconfig for the client cert NAME
  local name=$1 f
  f=$D/pki/$name.kubeconfig
  cat >"$f" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: cwj
  cluster: {server: $APISERVER, certificate-authority: $D/pki/ca.crt}
users:
- name: $name
  user: {client-certificate: $D/pki/$name.crt, client-key: $D/pki/$name.key}
contexts:
- name: cwj
  context: {cluster: cwj, user: $name, namespace: default}
current-context: cwj
EOF
}

make_pki() {
  mkdir -p "$D/pki"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$D/pki/ca.key" -out "$D/pki/ca.crt" \
    -subj "/CN=coworkjobs-test-cluster-ca" -days 2 2>/dev/null
  cert apiserver kube-apiserver "" "IP:$NODE_IP,IP:10.96.0.1,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
  cert admin admin system:masters
  cert controller-manager system:kube-controller-manager ""
  cert scheduler system:kube-scheduler ""
  cert kube-proxy system:kube-proxy ""
  cert kubelet "system:node:$NODE" system:nodes "IP:$NODE_IP,DNS:$NODE"
  cert coredns coredns ""
  cert front-proxy-client front-proxy-client ""
  cert metrics-server metrics-server "" "DNS:metrics-server.kube-system.svc,IP:$NODE_IP"
  cert kube-router kube-router ""
  local n
  for n in admin controller-manager scheduler kube-proxy kubelet coredns kube-router; do kubeconfig "$n"; done
  openssl genrsa -out "$D/pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$D/pki/sa.key" -pubout -out "$D/pki/sa.pub" 2>/dev/null
}

# --- up ----------------------------------------------------------------------------
network_up() {
  ip link add "$BRIDGE" type bridge
  ip addr add "$NODE_IP/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1
  mkdir -p "$D/cni"
  # hairpinMode: a pod reaching its own Service; no ipMasq (nothing leaves the
  # machine, so no chain to clean up).
  cat >"$D/cni/10-cwj.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "cwj", "plugins": [
  {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "isDefaultGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$NODE_IP"}]],
            "dataDir": "$D/cni/ipam"}},
  {"type": "loopback"}]}
EOF
}

containerd_up() {
  mkdir -p "$D/containerd"
  # restrict_oom_score_adj: this VM lacks CAP_SYS_RESOURCE; cgroupfs: the host
  # is cgroup v1 without systemd.
  cat >"$D/containerd/config.toml" <<EOF
version = 2
root = "$D/containerd/root"
state = "$D/containerd/state"
[grpc]
  address = "$D/containerd/containerd.sock"
[ttrpc]
  address = "$D/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$D/cni"
EOF
  start containerd containerd --config "$D/containerd/config.toml"
  wait_for 30 containerd ctr_ version
}

control_plane_up() {
  start etcd etcd --name cwj --data-dir "$D/etcd" \
    --listen-client-urls http://127.0.0.1:23790 --advertise-client-urls http://127.0.0.1:23790 \
    --listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 \
    --initial-cluster cwj=http://127.0.0.1:23800 --quota-backend-bytes 2147483648
  wait_for 30 etcd curl -fsS http://127.0.0.1:23790/health
  local p=$D/pki
  start kube-apiserver kube-apiserver --etcd-servers http://127.0.0.1:23790 \
    --bind-address "$NODE_IP" --advertise-address "$NODE_IP" --secure-port 6443 \
    --service-cluster-ip-range "$SVC_CIDR" --allow-privileged=false \
    --authorization-mode Node,RBAC --client-ca-file "$p/ca.crt" \
    --tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" \
    --kubelet-client-certificate "$p/apiserver-kubelet-client.crt" --kubelet-client-key "$p/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types InternalIP \
    --service-account-key-file "$p/sa.pub" --service-account-signing-key-file "$p/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --requestheader-client-ca-file "$p/ca.crt" --requestheader-allowed-names front-proxy-client \
    --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
    --requestheader-extra-headers-prefix X-Remote-Extra- \
    --proxy-client-cert-file "$p/front-proxy-client.crt" --proxy-client-key-file "$p/front-proxy-client.key" \
    --enable-aggregator-routing=true \
    --enable-admission-plugins NodeRestriction
  wait_for 90 kube-apiserver kubectl get --raw /readyz
  start kube-controller-manager kube-controller-manager --kubeconfig "$p/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$p/controller-manager.kubeconfig" --authorization-kubeconfig "$p/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --use-service-account-credentials \
    --service-account-private-key-file "$p/sa.key" --root-ca-file "$p/ca.crt" \
    --cluster-signing-cert-file "$p/ca.crt" --cluster-signing-key-file "$p/ca.key" \
    --service-cluster-ip-range "$SVC_CIDR" \
    --allocate-node-cidrs --cluster-cidr "$POD_CIDR" --node-cidr-mask-size 24 \
    --horizontal-pod-autoscaler-sync-period 5s --leader-elect=false
  start kube-scheduler kube-scheduler --kubeconfig "$p/scheduler.kubeconfig" \
    --authentication-kubeconfig "$p/scheduler.kubeconfig" --authorization-kubeconfig "$p/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false
}

node_up() {
  local p=$D/pki
  echo "nameserver $NODE_IP" >"$D/resolv.conf"
  cat >"$D/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$D/containerd/containerd.sock
address: $NODE_IP
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $p/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $p/kubelet.crt
tlsPrivateKeyFile: $p/kubelet.key
clusterDomain: cluster.local
clusterDNS: [$NODE_IP]
resolvConf: $D/resolv.conf
podLogsDir: $D/pod-logs
failSwapOn: false
serializeImagePulls: false
imageGCHighThresholdPercent: 100
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%}
podPidsLimit: 4096
maxPods: 60
EOF
  start kubelet kubelet --config "$D/kubelet.yaml" --kubeconfig "$p/kubelet.kubeconfig" \
    --root-dir "$D/kubelet" --hostname-override "$NODE" --node-ip "$NODE_IP"
  cat >"$D/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $p/kube-proxy.kubeconfig}
mode: iptables
clusterCIDR: $POD_CIDR
hostnameOverride: $NODE
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
  start kube-proxy kube-proxy --config "$D/kube-proxy.yaml"
  # CoreDNS on the host, on the bridge address every pod's resolv.conf names;
  # names outside the cluster get NXDOMAIN at once (nothing leaves the machine).
  cat >"$D/Corefile" <<EOF
cluster.local:53 in-addr.arpa:53 {
  bind $NODE_IP
  errors
  kubernetes cluster.local in-addr.arpa {
    kubeconfig $p/coredns.kubeconfig cwj
    fallthrough in-addr.arpa
  }
}
.:53 {
  bind $NODE_IP
  template ANY ANY { rcode NXDOMAIN }
}
EOF
  start coredns "coredns-$COREDNS_VERSION" -conf "$D/Corefile"
  wait_for 120 "node $NODE" kubectl wait --for=condition=Ready "node/$NODE" --timeout=1s
}

rbac_up() {
  # CoreDNS reads what its kubernetes plugin watches (as CoreDNS's own manifests grant).
  kubectl apply -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: coworkjobs-test-coredns}
rules:
- {apiGroups: [""], resources: [endpoints, services, pods, namespaces], verbs: [list, watch]}
- {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: coworkjobs-test-coredns}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: coworkjobs-test-coredns}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: coredns}]
EOF
}

deps_up() {
  # Private PostgreSQL (trust on the bridge only), Redis and a Temporal dev
  # server; the pods reach Temporal through a forward on the bridge address.
  local pgbin
  pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
  mkdir -p "$D/pg" && chown postgres "$D/pg"
  su postgres -s /bin/sh -c "$pgbin/initdb -D $D/pg/data -U postgres -A trust >/dev/null"
  cat >>"$D/pg/data/postgresql.conf" <<EOF
listen_addresses = '$NODE_IP'
port = $PG_PORT
unix_socket_directories = '$D/pg'
max_connections = 300
fsync = off
EOF
  echo "host all all $POD_CIDR trust" >>"$D/pg/data/pg_hba.conf"
  su postgres -s /bin/sh -c "$pgbin/pg_ctl -D $D/pg/data -l $D/pg/postgres.log -w start >/dev/null"
  psql -h "$NODE_IP" -p "$PG_PORT" -U postgres -qc 'create database coworkjobs' >/dev/null
  # Bound to the bridge address only, so protected mode (loopback clients only) goes.
  start redis redis-server --bind "$NODE_IP" --port "$REDIS_PORT" --protected-mode no --save "" --appendonly no --daemonize no
  wait_for 20 redis redis-cli -h "$NODE_IP" -p "$REDIS_PORT" ping
  [ -x bin/temporal ] || bash scripts/temporal.sh
  start temporal bin/temporal server start-dev --headless --ip 127.0.0.1 --port "$TEMPORAL_PORT" \
    --log-level warn
  wait_for 60 temporal bin/temporal operator cluster health --address "127.0.0.1:$TEMPORAL_PORT"
  temporal_forward on
}

# The tests cut Temporal off from the pods (workers must turn not ready) by
# stopping this forward, and restore it.
temporal_forward() {
  stop_pid temporal-forward
  # and the forked relays of open connections (the workers' gRPC streams).
  pkill -f "socat TCP-LISTEN:$TEMPORAL_FWD,bind=$NODE_IP" 2>/dev/null || true
  if [ "$1" = on ]; then
    start temporal-forward socat "TCP-LISTEN:$TEMPORAL_FWD,bind=$NODE_IP,fork,reuseaddr" "TCP:127.0.0.1:$TEMPORAL_PORT"
    wait_for 10 "temporal forward" bash -c "exec 3<>/dev/tcp/$NODE_IP/$TEMPORAL_FWD"
  fi
}

# NetworkPolicies enforced by kube-router's firewall on the host (its router
# and service proxy off: the bridge and kube-proxy do that), no port opened.
netpol_up() {
  kubectl apply -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: coworkjobs-test-kube-router}
rules:
- {apiGroups: [""], resources: [namespaces, pods, services, nodes, endpoints], verbs: [get, list, watch]}
- {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [get, list, watch]}
- {apiGroups: [networking.k8s.io], resources: [networkpolicies], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: coworkjobs-test-kube-router}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: coworkjobs-test-kube-router}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: kube-router}]
EOF
  start kube-router "kube-router-$KUBE_ROUTER_VERSION" --kubeconfig "$D/pki/kube-router.kubeconfig" \
    --hostname-override "$NODE" --run-firewall=true --run-router=false --run-service-proxy=false \
    --enable-cni=false --enable-ipv6=false --health-port 0 --metrics-port 0 --iptables-sync-period 30s
  wait_for 60 "kube-router's firewall" bash -c "iptables-save | grep -q '^:KUBE-ROUTER-'"
}

metrics_server_up() {
  # metrics-server for the HPA, on the host behind a selector-less Service.
  local p=$D/pki
  start metrics-server "metrics-server-$METRICS_SERVER_VERSION" --kubeconfig "$p/admin.kubeconfig" \
    --authentication-kubeconfig "$p/admin.kubeconfig" --authorization-kubeconfig "$p/admin.kubeconfig" \
    --bind-address "$NODE_IP" --secure-port 10350 --tls-cert-file "$p/metrics-server.crt" --tls-private-key-file "$p/metrics-server.key" \
    --requestheader-client-ca-file "$p/ca.crt" --requestheader-allowed-names front-proxy-client \
    --kubelet-insecure-tls --kubelet-preferred-address-types InternalIP --metric-resolution 15s --kubelet-request-timeout 5s
  kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata: {name: metrics-server, namespace: kube-system}
spec: {ports: [{name: https, port: 443, targetPort: 10350}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: metrics-server
  namespace: kube-system
  labels: {kubernetes.io/service-name: metrics-server}
addressType: IPv4
ports: [{name: https, port: 10350, protocol: TCP}]
endpoints: [{addresses: ["$NODE_IP"], conditions: {ready: true}}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  service: {name: metrics-server, namespace: kube-system, port: 443}
  group: metrics.k8s.io
  version: v1beta1
  insecureSkipTLSVerify: true
  groupPriorityMinimum: 100
  versionPriority: 100
EOF
  wait_for 90 "the metrics API" kubectl get --raw /apis/metrics.k8s.io/v1beta1
}

up() {
  local why
  why=$(cannot_run)
  if [ -n "$why" ]; then
    log "this machine cannot run containers: $why. Skipping the cluster scenario."
    exit 0
  fi
  install_packages
  build_tools
  down quiet
  mkdir -p "$D"/{log,run}
  build_services
  network_up
  make_pki
  containerd_up
  build_images
  control_plane_up
  node_up
  rbac_up
  netpol_up
  deps_up
  metrics_server_up
  log "cluster up: export KUBECONFIG=$KUBECONFIG (scripts/cluster.sh env)"
}

# --- test ----------------------------------------------------------------------
run_tests() {
  log "running the scenario (tests/cluster)"
  (cd tests && COWORKJOBS_CLUSTER=1 CLUSTER_DIR="$D" CLUSTER_NODE_IP="$NODE_IP" \
    CLUSTER_CHART="$ROOT/charts/coworkjobs" CLUSTER_IMAGE_TAG="$IMAGE_TAG" \
    CLUSTER_DATABASE_URL="postgres://postgres@$NODE_IP:$PG_PORT/coworkjobs?sslmode=disable" \
    CLUSTER_REDIS_URL="redis://$NODE_IP:$REDIS_PORT/0" \
    CLUSTER_TEMPORAL_ADDRESS="$NODE_IP:$TEMPORAL_FWD" CLUSTER_SCRIPT="$ROOT/scripts/cluster.sh" \
    go test -count=1 -timeout 40m -v ${CLUSTER_TEST_ARGS:-} ./cluster/)
}

# --- down ----------------------------------------------------------------------
down() {
  local quiet=${1:-}
  # Every step runs whether or not D is there: a run that was killed
  # may have left a bridge or chains without its state directory.
  [ -n "$quiet" ] || log "removing the cluster"
  # Pods first, through the kubelet, so their sandboxes and veths go the
  # normal way; then the processes; then whatever a crash left behind.
  if [ -f "$D/run/kube-apiserver.pid" ] && kubectl get --raw /readyz >/dev/null 2>&1; then
    stop_pid kube-controller-manager
    kubectl delete namespace --ignore-not-found --wait=false coworkjobs >/dev/null 2>&1 || true
    kubectl delete pods --all -A --grace-period=1 --wait=false >/dev/null 2>&1 || true
    for _ in $(seq 1 60); do [ -z "$(ctr_ tasks ls -q 2>/dev/null)" ] && break; sleep 0.5; done
  fi
  local n
  for n in metrics-server kube-router temporal-forward kube-proxy kubelet coredns kube-scheduler kube-controller-manager kube-apiserver etcd redis temporal; do
    stop_pid "$n"
  done
  # Containers the kubelet did not remove: kill their tasks, then containerd.
  if [ -S "$D/containerd/containerd.sock" ]; then
    for n in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s SIGKILL "$n" >/dev/null 2>&1 || true; done
    sleep 1
  fi
  stop_pid containerd
  pkill -KILL -f "containerd-shim-runc-v2 .*-address $D/" 2>/dev/null || true
  if [ -f "$D/pg/data/postmaster.pid" ]; then
    su postgres -s /bin/sh -c "$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)/pg_ctl -D $D/pg/data -m immediate stop" >/dev/null 2>&1 || true
  fi
  # Network: kube-proxy's chains, the pods' namespaces, the bridge.
  if [ -x "$BIN/kube-proxy" ]; then "$BIN/kube-proxy" --cleanup >/dev/null 2>&1 || true; fi
  if [ -x "$CACHE/bin/kube-router-$KUBE_ROUTER_VERSION" ]; then
    "$CACHE/bin/kube-router-$KUBE_ROUTER_VERSION" --cleanup-config >/dev/null 2>&1 || true
  fi
  clean_chains
  clean_ipsets
  for n in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^cni-' || true); do
    ip netns delete "$n" 2>/dev/null || true
  done
  ip link delete "$BRIDGE" 2>/dev/null || true
  # Mounts under D (overlay snapshots, shm, secrets' tmpfs), deepest first.
  { grep -o " $D/[^ ]*" /proc/mounts || true; } | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  rm -rf "$D"
  leftovers
}

# The kubelet's own chains (KUBE-FIREWALL, canaries), which kube-proxy
# --cleanup leaves: the jumps to them, then the chains.
clean_chains() {
  local cmd t c r
  for cmd in iptables ip6tables; do
    command -v "$cmd-save" >/dev/null || continue
    for t in filter nat mangle raw; do
      "$cmd-save" -t "$t" 2>/dev/null | grep -qE '^:(KUBE-|CNI-)' || continue
      { "$cmd-save" -t "$t" | grep -E '^-A [A-Z]+ .*-j (KUBE-|CNI-)' || true; } | sed 's/^-A/-D/' | while read -r r; do
        eval "$cmd -t $t $r" 2>/dev/null || true
      done
      for c in $("$cmd-save" -t "$t" | grep -oE '^:(KUBE-|CNI-)[^ ]+' | tr -d :); do "$cmd" -t "$t" -F "$c" 2>/dev/null || true; done
      for c in $("$cmd-save" -t "$t" | grep -oE '^:(KUBE-|CNI-)[^ ]+' | tr -d :); do "$cmd" -t "$t" -X "$c" 2>/dev/null || true; done
    done
  done
}

# kube-router's ipsets, once no rule refers to them.
clean_ipsets() {
  local set
  command -v ipset >/dev/null || return 0
  for set in $(ipset list -n 2>/dev/null | grep '^KUBE-' || true); do ipset destroy "$set" 2>/dev/null || true; done
}

# Fails when anything the cluster made is still there.
leftovers() {
  local left=()
  local procs="$D/|coredns-$COREDNS_VERSION|metrics-server-$METRICS_SERVER_VERSION|kube-router-$KUBE_ROUTER_VERSION"
  pgrep -f "$procs" >/dev/null && left+=("processes: $(pgrep -af "$procs" | head -5 | tr '\n' ';')")
  ip link show "$BRIDGE" >/dev/null 2>&1 && left+=("bridge $BRIDGE")
  { iptables-save; ip6tables-save; } 2>/dev/null | grep -qE '^:(KUBE-|CNI-)' && left+=("iptables chains: $({ iptables-save; ip6tables-save; } 2>/dev/null | grep -oE '^:(KUBE-|CNI-)[^ ]+' | sort -u | head -5 | tr '\n' ' ')")
  ipset list -n 2>/dev/null | grep -q '^KUBE-' && left+=("ipsets: $(ipset list -n | grep '^KUBE-' | head -3 | tr '\n' ' ')")
  grep -q " $D" /proc/mounts && left+=("mounts under $D")
  ip netns list 2>/dev/null | grep -q '^cni-' && left+=("network namespaces cni-*")
  [ -e "$D" ] && left+=("$D")
  if [ ${#left[@]} -gt 0 ]; then
    log "left behind: ${left[*]}"
    return 1
  fi
}

case "${1:-all}" in
  up) up ;;
  test) run_tests ;;
  down) down ;;
  temporal-forward) temporal_forward "${2:?on or off}" ;;
  env) echo "export KUBECONFIG=$KUBECONFIG PATH=\"$BIN:$CACHE/bin:\$PATH\"" ;;
  all)
    why=$(cannot_run)
    if [ -n "$why" ]; then log "this machine cannot run containers: $why. Skipping the cluster scenario."; exit 0; fi
    trap 'down || true' EXIT
    up
    run_tests
    trap - EXIT
    down
    ;;
  *) echo "usage: $0 [up|test|down|env]" >&2; exit 2 ;;
esac
