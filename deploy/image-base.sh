# Shared by build-agent-image and build-platform-image (sourced, not run): the podman
# command, the base image (official when it can be pulled, else a Debian bookworm made
# with debootstrap) and the host's CA bundle for the build's package downloads.
#
# Expects: $workdir (a scratch folder the caller removes) and a say() function.
# Sets: podman_cmd (array), base, build_args (array).

official_base="docker.io/library/python:3.11-slim-bookworm"
local_base="localhost/bearpit-base:bookworm"
mirror="${BEARPIT_DEBIAN_MIRROR:-http://deb.debian.org/debian}"

# crun refuses hosts with a hybrid cgroup hierarchy (v1 controllers plus a cgroup2
# mount); runc handles those as well as pure v1 or v2, so it is preferred when present.
podman_cmd=(podman)
if command -v runc >/dev/null 2>&1; then
    podman_cmd+=(--runtime runc)
fi

debootstrap_base() {
    if "${podman_cmd[@]}" image exists "$local_base"; then
        say "base $local_base exists"
        return
    fi
    if ! command -v debootstrap >/dev/null 2>&1; then
        say "installing debootstrap"
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 \
            install -y -qq debootstrap >/dev/null
    fi
    local root="$workdir/rootfs"
    say "debootstrap bookworm (python3, python3-venv) from $mirror"
    debootstrap --variant=minbase --include=python3,python3-venv \
        bookworm "$root" "$mirror" >"$workdir/debootstrap.log" 2>&1 || {
        tail -n 30 "$workdir/debootstrap.log" >&2
        return 1
    }
    # Downloaded packages, indexes and documentation are only weight in an image.
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
        "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/*
    say "importing the base as $local_base"
    tar -C "$root" --numeric-owner -c . | "${podman_cmd[@]}" import - "$local_base" >/dev/null
    # Imported: the tree is a second copy on the same disk while the image builds.
    rm -rf --one-file-system "$root"
}

choose_base() {
    if [ -n "${BEARPIT_AGENT_BASE:-}" ]; then
        base="$BEARPIT_AGENT_BASE"
        say "base $base (BEARPIT_AGENT_BASE)"
    elif "${podman_cmd[@]}" image exists "$official_base"; then
        base="$official_base"
        say "base $base exists"
    elif timeout 300 "${podman_cmd[@]}" pull -q "$official_base" >/dev/null 2>&1; then
        base="$official_base"
        say "pulled base $base"
    else
        say "cannot pull $official_base; building a Debian base"
        debootstrap_base
        base="$local_base"
    fi
}

build_args=()
# pip and uv trust what the host trusts, a TLS-inspecting proxy's CA included: the
# bundle the host's own tools are pointed at (SSL_CERT_FILE), else the system's.
host_ca="${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}"
if [ -r "$host_ca" ]; then
    build_args+=(--volume "$host_ca:/run/host-ca.crt:ro" --build-arg PIP_CA_BUNDLE=/run/host-ca.crt)
fi
