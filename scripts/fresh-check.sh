#!/usr/bin/env bash
# Proves that what the repository pins can be fetched on a fresh machine,
# whatever this machine already has installed or cached:
#   - every module in go.sum downloads, by its recorded version, into an
#     empty module cache;
#   - with only that cache and the network off (GOPROXY=off), every
#     package and test of the module resolves and the go.mod tools
#     (go tool staticcheck) build;
#   - the wrapper module that builds the test cluster's Kubernetes
#     binaries (tools/k8s) downloads the same way and its commands resolve
#     offline from it, and so do the tailscale method's control server
#     (tools/tailscale) and the test cluster's flanneld (tools/flannel, at
#     the version install.sh's FLANNEL_VERSION names);
#   - every tool pinned by install.sh is served by its registry at the
#     version written there (wireguard-go by its Go pseudo-version,
#     nebula and nebula-cert by their Go module version,
#     tailscaled and tailscale by their Go module version,
#     boringtun-cli by its crates.io version);
#   - every Debian package install.sh names exists in the package lists
#     (cargo-web included, which it installs only on a machine without
#     cargo).
# It installs nothing and leaves nothing behind. Run by "make test";
# docs/development.md says how to reproduce a whole fresh-machine run.
set -euo pipefail
cd "$(dirname "$0")/.."

tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
# -trimpath keeps the empty module cache's path out of the build cache's
# keys: what it builds (staticcheck, the pinned daemons) is compiled once
# per source and reused by later checks, which still download every
# module afresh and link every binary.
export GOMODCACHE="$tmp/mod" GOPATH="$tmp/gopath" GOFLAGS="-modcacherw -trimpath"

echo "fresh-check: every go.sum module into an empty module cache"
mapfile -t mods < <(awk '$2 !~ /\/go\.mod$/ {print $1 "@" $2}' go.sum | sort -u)
go mod download "${mods[@]}"

echo "fresh-check: packages, tests and go.mod tools resolve offline from it"
GOPROXY=off GOFLAGS="-mod=readonly -modcacherw" go list -deps -test ./... >/dev/null
GOPROXY=off GOFLAGS="-mod=readonly -modcacherw -trimpath" go tool staticcheck -version >/dev/null

echo "fresh-check: the Kubernetes binaries' wrapper module (tools/k8s) downloads and resolves offline"
(cd tools/k8s && go mod download &&
  GOPROXY=off GOFLAGS="-mod=readonly -modcacherw" go list -tags tools -deps \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubelet \
    k8s.io/kubernetes/cmd/kube-controller-manager >/dev/null)

echo "fresh-check: the tailscale control server's wrapper module (tools/tailscale) downloads and resolves offline"
(cd tools/tailscale && go mod download &&
  GOPROXY=off GOFLAGS="-mod=readonly -modcacherw" go list -deps . >/dev/null)

echo "fresh-check: flanneld's wrapper module (tools/flannel) downloads and resolves offline, at install.sh's version"
fl=$(sed -n 's/^ *FLANNEL_VERSION=//p' scripts/install.sh)
grep -qx "require github.com/flannel-io/flannel $fl" tools/flannel/go.mod ||
  { echo "fresh-check: FLANNEL_VERSION=$fl in scripts/install.sh is not what tools/flannel/go.mod requires" >&2; exit 1; }
(cd tools/flannel && go mod download &&
  GOPROXY=off GOFLAGS="-mod=readonly -modcacherw" go list -deps github.com/flannel-io/flannel >/dev/null)

echo "fresh-check: tools pinned by scripts/install.sh are served at their versions"
wg=$(sed -n 's/^ *WIREGUARD_GO_MODULE=//p' scripts/install.sh)
[ -n "$wg" ] || { echo "fresh-check: no WIREGUARD_GO_MODULE in scripts/install.sh" >&2; exit 1; }
GOBIN="$tmp/bin" go install "$wg"
[ -x "$tmp/bin/wireguard" ] || { echo "fresh-check: go install $wg built no wireguard binary" >&2; exit 1; }
nb=$(sed -n 's/^ *NEBULA_CMD=//p' scripts/install.sh)
nbc=$(sed -n 's/^ *NEBULA_CERT_CMD=//p' scripts/install.sh)
[ -n "$nb" ] && [ -n "$nbc" ] || { echo "fresh-check: no NEBULA_CMD or NEBULA_CERT_CMD in scripts/install.sh" >&2; exit 1; }
GOBIN="$tmp/bin" go install "$nb" "$nbc"
for p in nebula nebula-cert; do
  [ -x "$tmp/bin/$p" ] || { echo "fresh-check: go install $nb $nbc built no $p binary" >&2; exit 1; }
done
tsd=$(sed -n 's/^ *TAILSCALED_CMD=//p' scripts/install.sh)
tsc=$(sed -n 's/^ *TAILSCALE_CMD=//p' scripts/install.sh)
tst=$(sed -n 's/^ *TAILSCALE_TAGS=//p' scripts/install.sh)
[ -n "$tsd" ] && [ -n "$tsc" ] && [ -n "$tst" ] || { echo "fresh-check: no TAILSCALED_CMD, TAILSCALE_CMD or TAILSCALE_TAGS in scripts/install.sh" >&2; exit 1; }
GOBIN="$tmp/bin" go install -tags "$tst" "$tsd" "$tsc"
for p in tailscaled tailscale; do
  [ -x "$tmp/bin/$p" ] || { echo "fresh-check: go install $tsd $tsc built no $p binary" >&2; exit 1; }
done
bt=$(grep -o 'boringtun-cli --version [0-9][^ ]*' scripts/install.sh | awk '{print $3}')
[ -n "$bt" ] || { echo "fresh-check: no boringtun-cli version in scripts/install.sh" >&2; exit 1; }
# cargo as install.sh finds it (which, in make test, has just installed
# one when the machine had none).
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  PATH=$HOME/.cargo/bin:$PATH
fi
command -v cargo >/dev/null 2>&1 || { echo "fresh-check: no cargo to ask crates.io for boringtun-cli $bt (scripts/install.sh test installs one)" >&2; exit 1; }
CARGO_HOME="$tmp/cargo" cargo info --quiet "boringtun-cli@$bt" >/dev/null

echo "fresh-check: Debian packages named by scripts/install.sh exist"
mapfile -t pkgs < <(bash scripts/install.sh --list test)
apt-get install -s -qq --no-install-recommends "${pkgs[@]}" >/dev/null
echo "fresh-check: ok"
