#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Proves the README's two commands on a fresh machine: builds a minimal
# Debian 12 root (debootstrap --variant=minbase bookworm, from the mirror apt
# already uses), clones this repository into it and runs .ci/run there, which
# runs the README's first command (build and start; checked by `version`) and
# then its second (install the test packages, `make test`). Long (the whole
# suite, plus the packages): not part of `make test`. Run as root:
#
#   timeout 2400 scripts/fresh-debian-check.sh [ROOT]
#
# ROOT (default: a new directory under /var/tmp) is removed afterwards unless
# KEEP=1; the suite's logs are copied to LOGS (/var/tmp/nodelay-fresh-logs)
# and .ci/run's output to LOG (/var/tmp/nodelay-fresh-check.log). The chroot
# shares this machine's network, so apt can download; a policy-rc.d stops
# the packages it installs from starting services. STEPS (default "ci
# package"): "ci" runs .ci/run; "package" then builds the .deb there,
# installs it with apt, verifies its unit and runs the unit's ExecStart as
# user nodelay (systemctl itself needs systemd as PID 1, which a chroot has
# not).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" = 0 ] || { echo "run as root (debootstrap, chroot, mount)" >&2; exit 2; }

# The mirror apt uses: the first URI serving the main Debian archive, in
# either sources format (deb822 .sources or one-line .list).
mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources \
            2>/dev/null |
         awk '$1 == "URIs:" { for (i = 2; i <= NF; i++) print $i }
              $1 == "deb" { for (i = 2; i <= NF; i++) if ($i !~ /^\[/) { print $i; break } }' |
         grep -E '/debian/?$' | head -1 || true)
mirror=${mirror:-http://deb.debian.org/debian}

if ! command -v debootstrap >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap
fi

root=${1:-$(mktemp -d /var/tmp/nodelay-fresh.XXXXXX)}
chmod 0755 "$root" # mktemp's 0700 would keep every user but root out of "/"
STEPS=${STEPS:-ci package}
logs=${LOGS:-/var/tmp/nodelay-fresh-logs}
mounted=()
cleanup() {
    # processes left in the root (a service a package started despite
    # policy-rc.d): stop them by pid before unmounting
    local p
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -KILL "${p#/proc/}" 2>/dev/null
    done
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
    if [ "${KEEP:-0}" != 1 ]; then rm -rf --one-file-system "$root"; fi
}
trap cleanup EXIT

echo "== debootstrap --variant=minbase bookworm $root $mirror"
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
    { tail -20 "$root.debootstrap.log"; exit 1; }
rm -f "$root.debootstrap.log"
for m in proc sys dev dev/pts; do
    mkdir -p "$root/$m"
    case $m in
    proc) mount -t proc proc "$root/proc" ;;
    sys) mount -t sysfs sys "$root/sys" ;;
    *) mount --bind "/$m" "$root/$m" ;;
    esac
    mounted+=("$root/$m")
done
cp /etc/resolv.conf "$root/etc/resolv.conf"
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod +x "$root/usr/sbin/policy-rc.d"

branch=$(git -C "$repo" rev-parse --abbrev-ref HEAD)
echo "== clone $repo ($branch at $(git -C "$repo" rev-parse --short HEAD)) into $root/root/nodelay"
git clone -q --no-hardlinks --branch "$branch" "$repo" "$root/root/nodelay"

in_root() { # command...: run in the chroot with a clean environment
    chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        bash -c "cd /root/nodelay && $*"
}

rc=0
log=${LOG:-/var/tmp/nodelay-fresh-check.log}
: >"$log"
if [[ " $STEPS " == *" ci "* ]]; then
    echo "== in the chroot: .ci/run (the README's first command, then its second)"
    set +e
    in_root ./.ci/run 2>&1 | tee -a "$log"
    rc=${PIPESTATUS[0]}
    set -e
    echo "== .ci/run in the minimal root exited $rc"
    # keep the suite's logs (the package step's clean removes build/)
    if [ -d "$root/root/nodelay/build/test-logs" ]; then
        rm -rf "$logs" && cp -r "$root/root/nodelay/build/test-logs" "$logs" &&
            echo "== the suite's logs: $logs"
    fi
fi
if [[ " $STEPS " == *" package "* ]]; then
    # What an operator does with the package, short of systemctl (no systemd
    # runs as PID 1 in a chroot): build it, install it, and run the unit's
    # ExecStart as the unit's user.
    echo "== in the chroot: build the .deb, install it, run the unit's ExecStart as nodelay"
    set +e
    in_root '
        set -e
        ./scripts/install-deps.sh >/dev/null
        dpkg-buildpackage -us -uc -b >/var/tmp/dpkg-buildpackage.log 2>&1 ||
            { tail -20 /var/tmp/dpkg-buildpackage.log; exit 1; }
        apt-get install -y -qq ../nodelay_*_$(dpkg --print-architecture).deb >/dev/null
        dpkg -s nodelay | grep -E "^(Status|Version)"
        dpkg-query -W -f="conffiles:\${Conffiles}
" nodelay
        id nodelay
        cmd=$(sed -n "s/^ExecStart=//p" /lib/systemd/system/nodelay.service)
        echo "ExecStart: $cmd"
        systemd-analyze verify /lib/systemd/system/nodelay.service && echo "unit verifies"
        setpriv --reuid=nodelay --regid=nodelay --clear-groups $cmd &
        pid=$!
        for _ in $(seq 50); do
            exec 3<>/dev/tcp/127.0.0.1/11211 2>/dev/null && break
            sleep 0.2
        done
        printf "version
" >&3
        read -r -t 5 answer <&3
        exec 3>&-
        echo "the installed service answers: $answer"
        kill -TERM $pid
        wait $pid
        echo "and stops with exit $?"
        [ -n "$answer" ]
    ' 2>&1 | tee -a "$log"
    prc=${PIPESTATUS[0]}
    set -e
    echo "== the package in the minimal root: exit $prc"
    [ "$rc" -ne 0 ] || rc=$prc
fi
exit "$rc"
