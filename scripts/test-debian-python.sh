#!/usr/bin/env bash
# The CPython 3.14 leg on the C core: Debian sid's python3.14, in a minimal Debian that
# debootstrap makes under .cache/debian-sid, with whyalive built there from this tree.
#
#   sudo bash scripts/test-debian-python.sh [--debug] [pytest arguments]   # as root
#
# --debug: on python3.14d instead, Debian's debug build (Py_DEBUG: the interpreter's own
# assertions and reference-count checks, which catch a misused object in the C core where
# a release build reads on), and without NumPy, which has no wheel for that ABI.
#
# pyenv cannot build 3.14 here and Pyodide's 3.14 runs only the pure-Python core; Debian's
# is a real CPython (3.14.5 or later: the generational collector, where Pyodide has 3.14.0's
# incremental one) and compiles the C core like any user's pip would. What it installs:
# debootstrap on the host if missing; the chroot (python3.14, its headers, its debug build
# and gcc, from Debian's registry: under a minute, once, then reused); a venv in it with the
# test tools from PyPI (once per build); whyalive from this tree's files (every run). Exit
# code: pytest's, or 2 when the chroot cannot be made.
set -euo pipefail
cd "$(dirname "$0")/.."
PACKAGES=python3.14,python3.14-dev,python3.14-venv,python3.14-dbg,gcc
TOOLS=("pytest>=8" "pytest-xdist>=3.2" "hypothesis>=6" "numpy>=1.24")
MIRROR=http://deb.debian.org/debian
root="$(pwd)/.cache/debian-sid"
python=python3.14
venv=/root/venv
if [ "${1:-}" = "--debug" ]; then
  shift
  python=python3.14d
  venv=/root/venv-debug
  TOOLS=("${TOOLS[@]:0:3}")
fi

fail() {
  echo "test-debian-python.sh: $*" >&2
  exit 2
}
[ "$(id -u)" = 0 ] || fail "needs root (debootstrap, chroot and mounts)"
if ! command -v debootstrap >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap \
    >/dev/null || fail "cannot install debootstrap"
fi

# Whatever is mounted under the chroot, deepest first: what this run mounts, and what a run
# that was killed left (rm must never walk into the host's /dev through it).
unmount_all() {
  awk -v root="$root/" 'index($2, root) == 1 { print $2 }' /proc/mounts | sort -r |
    while read -r point; do umount -l "$point" || true; done
}
unmount_all
trap unmount_all EXIT

if [ "$(cat "$root/.packages" 2>/dev/null)" != "$PACKAGES" ]; then
  rm -rf --one-file-system "$root"
  mkdir -p "$root"
  debootstrap --variant=minbase --include="$PACKAGES" sid "$root" "$MIRROR" \
    >"$root.log" 2>&1 || fail "debootstrap failed: see $root.log"
  echo "$PACKAGES" >"$root/.packages"
fi

# What pip needs from the host to reach PyPI the way the host does: name resolution, its
# configuration (index, constraints) and the certificates that configuration names.
for file in /etc/resolv.conf /etc/pip.conf /etc/ssl/certs/ca-certificates.crt; do
  [ -f "$file" ] && mkdir -p "$root$(dirname "$file")" && cp -L "$file" "$root$file"
done
[ -d /etc/xdg/pip ] && mkdir -p "$root/etc/xdg" && cp -rL /etc/xdg/pip "$root/etc/xdg/"
# A find-links folder of the host's pip.conf: present (empty) so pip does not warn.
[ -d /opt/wheels ] && mkdir -p "$root/opt/wheels"

{ mount -t proc proc "$root/proc" && mount --bind /dev "$root/dev" &&
  mkdir -p "$root/dev/shm" && mount -t tmpfs shm "$root/dev/shm"; } || fail "cannot mount in the chroot"

# The tree as git sees it (tracked and new files, nothing ignored): what CI's clone holds.
rm -rf --one-file-system "$root/root/whyalive" && mkdir -p "$root/root/whyalive"
git ls-files -z --cached --others --exclude-standard |
  tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$root/root/whyalive"

inside() { chroot "$root" env HOME=/root PATH=/usr/local/bin:/usr/bin:/bin bash -c "$1"; }
if [ "$(cat "$root$venv/.tools" 2>/dev/null)" != "${TOOLS[*]}" ]; then
  inside "rm -rf $venv && $python -m venv $venv" || fail "no venv"
  inside "$venv/bin/python -m pip install -q --disable-pip-version-check $(printf '%q ' "${TOOLS[@]}")" ||
    fail "cannot install the test tools"
  echo "${TOOLS[*]}" >"$root$venv/.tools"
fi
inside "cd /root/whyalive && $venv/bin/python -m pip install -q --disable-pip-version-check . --no-deps" ||
  fail "whyalive does not build on $(inside "$python -V")"
inside "cd / && $venv/bin/python -c 'import whyalive.graph.core as c, sys; assert c.c_implementation() is not None, \"no C core\"; print(\"CPython\", sys.version.split()[0], \"(Debian sid, $python), C core\")'" ||
  fail "the C core was not built"
inside "cd /root/whyalive && $venv/bin/python -m pytest -p no:cacheprovider $(printf '%q ' "$@")"
