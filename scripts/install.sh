#!/usr/bin/env bash
# Installs what tunbench needs and is missing, and nothing else.
#   scripts/install.sh run    what "tunbench run" needs (load tools)
#   scripts/install.sh test   everything the test suite needs, including the
#                             kernel lab (qemu, busybox-static, the guest
#                             kernel package, fetched into the cache) and every
#                             method's userspace programs
#   scripts/install.sh --list run|test
#                             print the Debian packages of a mode, one a
#                             line, and install nothing (test: with
#                             cargo-web, installed only without a cargo)
# Debian packages only, always with --no-install-recommends (without it,
# wireguard-tools pulls in a whole kernel image). Idempotent: a second run
# installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

list=
if [ "${1:-}" = --list ]; then list=1; shift; fi
mode=${1:-run}
run_pkgs=(iperf3 sockperf iproute2 iputils-ping procps)
test_pkgs=(ethtool busybox-static qemu-system-x86 kmod cpio xz-utils zstd
  wireguard-tools strongswan-charon strongswan-swanctl libcharon-extra-plugins libstrongswan-standard-plugins
  openvswitch-switch openvpn openssl chromium fonts-liberation clang llvm libbpf-dev linux-libc-dev
  openssh-server containerd runc etcd-server containernetworking-plugins
  openssh-client proxychains4
  nftables postgresql)
# nftables (nft) is for the tests' foreign-state fixture: the firewall rule
# a user's host has before tunbench arrives (internal/testbed/testbedtest).
# postgresql is for the PostgreSQL store's tests, which initdb and start a
# server of their own in a temporary directory on a free port, as the
# package's postgres user (internal/store/pgtest); a system cluster the
# package may start is left alone.

# Debian's Rust toolchain, for building boringtun-cli (below) and for
# fresh-check's question to crates.io, installed in test mode only when the
# machine has no cargo of its own. Not Debian 12's cargo package: that is Rust 1.63, and
# boringtun-cli 0.7.1 --locked needs 1.88 or newer (its Cargo.lock pins
# time 0.3.47, and the lock file's format needs cargo 1.78). cargo-web is
# the Rust Debian 12 keeps current for building browsers (1.96 from
# bookworm-security; the 1.85 of the bookworm release itself is too old).
cargo_pkg=cargo-web

case "$mode" in
run) pkgs=("${run_pkgs[@]}") ;;
test) pkgs=("${run_pkgs[@]}" "${test_pkgs[@]}") ;;
*) echo "usage: $0 [--list] run|test" >&2; exit 2 ;;
esac
if [ -n "$list" ]; then
  printf '%s\n' "${pkgs[@]}"
  if [ "$mode" = test ]; then echo "$cargo_pkg"; fi
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install.sh: run as root (apt-get install needs it)" >&2
  exit 1
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# The machine's own cargo comes first: on PATH, or rustup's in ~/.cargo/bin
# (which a root shell's PATH may lack).
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  PATH=$HOME/.cargo/bin:$PATH
fi
if [ "$mode" = test ] && ! command -v cargo >/dev/null 2>&1; then
  missing+=("$cargo_pkg")
fi
# The kernel lab fetches a stock kernel with apt-get download, which needs
# package lists.
if [ ${#missing[@]} -gt 0 ] || { [ "$mode" = test ] && [ -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v lock)" ]; }; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "install.sh: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "$mode" = test ]; then
  # Installing openvswitch-switch or strongswan may start their system
  # services; tunbench runs its own private instances and wants none.
  for svc in openvswitch-switch ovsdb-server ovs-vswitchd strongswan-starter strongswan; do
    if command -v systemctl >/dev/null 2>&1; then systemctl stop "$svc" >/dev/null 2>&1 || true; fi
  done
  pkill -x ovs-vswitchd 2>/dev/null || true
  pkill -x ovsdb-server 2>/dev/null || true
  # openssh-server is there for the ssh testbed's tests, which run private
  # sshd instances inside their own namespaces (internal/remotehost/sshtest),
  # and with openssh-client for the ssh-tunnel method (ssh -w to a private sshd);
  # a system sshd the package may start is left alone: it may be how this
  # machine is reached.
  # containerd, runc, etcd-server and containernetworking-plugins are for
  # the kubernetes test cluster (internal/kubehost/kubetest), which runs its
  # own etcd and containerds inside its namespaces; services the packages
  # start are left alone (the cluster's ports are in its own namespaces).

  # wireguard-go: the current release, pinned; Debian's 2022 build is about
  # five times slower.
  # Upstream tags lack the "v" Go wants, so the release 0.0.20250522 is
  # reached by its pseudo-version; its --version prints v0.0.20250522.
  WIREGUARD_GO_MODULE=golang.zx2c4.com/wireguard@v0.0.0-20260522210424-ecfc5a8d5446
  if ! /usr/local/bin/wireguard-go --version 2>/dev/null | grep -q "0.0.20250522"; then
    echo "install.sh: building wireguard-go 0.0.20250522"
    tmp=$(mktemp -d)
    GOBIN="$tmp" GOFLAGS=-buildvcs=false go install "$WIREGUARD_GO_MODULE"
    install -m 0755 "$tmp/wireguard" /usr/local/bin/wireguard-go
    rm -rf "$tmp"
  fi

  # nebula and nebula-cert: pinned, from the Go module. v1.11.2 imports a
  # netlink fork (github.com/DefinedNet/netlink) whose source the module
  # proxy refuses; its fixes are for Windows, Android and macOS, so on
  # Linux v1.11.1 is the same program.
  NEBULA_CMD=github.com/slackhq/nebula/cmd/nebula@v1.11.1
  NEBULA_CERT_CMD=github.com/slackhq/nebula/cmd/nebula-cert@v1.11.1
  if ! /usr/local/bin/nebula -version 2>/dev/null | grep -qx "Version: ${NEBULA_CMD#*@v}" ||
    ! /usr/local/bin/nebula-cert -version 2>/dev/null | grep -qx "Version: ${NEBULA_CERT_CMD#*@v}"; then
    echo "install.sh: building nebula ${NEBULA_CMD#*@}"
    tmp=$(mktemp -d)
    GOBIN="$tmp" GOFLAGS=-buildvcs=false go install "$NEBULA_CMD" "$NEBULA_CERT_CMD"
    install -m 0755 "$tmp/nebula" "$tmp/nebula-cert" /usr/local/bin/
    rm -rf "$tmp"
  fi

  # tailscaled and tailscale: pinned, from the Go module, like nebula.
  # v1.100.0 is the newest whose go.mod this Go builds (it declares go
  # 1.26.4; later releases need go 1.27). go install records no VCS stamp,
  # so --version prints 1.100.0-ERR-BuildInfo. The tailscale method's
  # control server, tunbench-tscontrol, is built from the wrapper module
  # tools/tailscale, which pins the same tailscale.com (its test control
  # server, DERP and STUN). Both are built without Tailscale's iptables
  # support (its own build tag ts_omit_iptables): with it, tailscaled's
  # start-up clean-up lists its chains through iptables even with
  # --netfilter-mode=off, and on the nf_tables backend that creates the
  # empty filter and nat tables on a host that had none. Without it,
  # tailscaled only reads the nftables ruleset and leaves the firewall as
  # it was; the method never asks for netfilter rules.
  TAILSCALED_CMD=tailscale.com/cmd/tailscaled@v1.100.0
  TAILSCALE_CMD=tailscale.com/cmd/tailscale@v1.100.0
  TAILSCALE_TAGS=ts_omit_iptables
  if ! /usr/local/bin/tailscaled --version 2>/dev/null | head -1 | grep -q "^${TAILSCALED_CMD#*@v}\(-ERR-BuildInfo\)\?$" ||
    ! /usr/local/bin/tailscale --version 2>/dev/null | head -1 | grep -q "^${TAILSCALE_CMD#*@v}\(-ERR-BuildInfo\)\?$" ||
    ! go version -m /usr/local/bin/tailscaled 2>/dev/null | grep -q "^[[:space:]]*build[[:space:]]*-tags=${TAILSCALE_TAGS}$"; then
    echo "install.sh: building tailscaled and tailscale ${TAILSCALED_CMD#*@} (-tags $TAILSCALE_TAGS)"
    tmp=$(mktemp -d)
    GOBIN="$tmp" GOFLAGS=-buildvcs=false go install -tags "$TAILSCALE_TAGS" "$TAILSCALED_CMD" "$TAILSCALE_CMD"
    install -m 0755 "$tmp/tailscaled" "$tmp/tailscale" /usr/local/bin/
    rm -rf "$tmp"
  fi
  echo "install.sh: building tunbench-tscontrol (tools/tailscale)"
  (cd tools/tailscale && go build -o /usr/local/bin/tunbench-tscontrol .)

  # flanneld: Flannel's daemon, for the kubernetes test cluster's CNI
  # choice "flannel" (internal/kubehost/kubetest), pinned by the wrapper
  # module tools/flannel (github.com/flannel-io/flannel v0.28.10; its
  # go.mod says why one SDK module is replaced). FLANNEL_VERSION must be
  # the version tools/flannel/go.mod requires; the version is stamped so
  # that flanneld --version says it.
  FLANNEL_VERSION=v0.28.10
  if ! /usr/local/bin/flanneld --version 2>&1 | grep -qx "$FLANNEL_VERSION"; then
    echo "install.sh: building flanneld $FLANNEL_VERSION (tools/flannel)"
    (cd tools/flannel && GOWORK=off go build -ldflags "-X github.com/flannel-io/flannel/pkg/version.Version=$FLANNEL_VERSION" \
      -o /usr/local/bin/flanneld github.com/flannel-io/flannel)
  fi

  # boringtun: pinned, from crates.io, about two minutes, with the
  # machine's own cargo when it has one (rustup's included) and Debian's
  # cargo-web (installed above) otherwise. The method is optional for
  # "tunbench run", not for "make test": its tests fail in strict mode
  # without it, so a failed build fails here, loudly.
  if ! command -v boringtun-cli >/dev/null 2>&1; then
    echo "install.sh: building boringtun-cli 0.7.1 with $(cargo --version)"
    if ! cargo install boringtun-cli --version 0.7.1 --locked --root /usr/local --quiet; then
      echo "install.sh: FAILED to build boringtun-cli 0.7.1 (--locked) with $(cargo --version); it needs Rust 1.88 or newer (Debian 12: $cargo_pkg from bookworm-security, or rustup)" >&2
      exit 1
    fi
  fi

  # The kernel lab's guest kernel: Debian's stock kernel package, unpacked
  # into tunbench's cache (never installed on this host).
  go build -o bin/tunbench ./cmd/tunbench
  ./bin/tunbench lab fetch >/dev/null

  # Lint tools are go.mod tool dependencies (go tool staticcheck), fetched
  # by the version go.mod pins: nothing to install here.
fi
