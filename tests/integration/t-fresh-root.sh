#!/bin/bash
# t-fresh-root: tools/fresh-root-check fails a list that does not install on a
# fresh Debian 12 root, naming the package: one naming a package the archive
# lacks (powercut-no-such-package), one leaning on a foreign architecture
# this machine may have been given by hand (libjson-c-dev:arm64, with no
# install-cross-deps to add arm64); and passes a list that installs (jq).
# Needs root and the bare root (a debootstrap, cached in build/fresh-root/):
# runs when PC_FRESH_ROOT=1 (make fresh-root-check, after the lists' own
# check); skips otherwise.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
echo "t-fresh-root: a list that does not install on a fresh root fails, named"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
[ "${PC_FRESH_ROOT:-}" = 1 ] || skip "PC_FRESH_ROOT=1 not set (make fresh-root-check runs it: a debootstrap and apt in chroots, as root)"
[ "$(id -u)" = 0 ] || skip "needs root (debootstrap, chroot, mount)"

printf '# a package the archive lacks\njq\npowercut-no-such-package\n' > "$T/nosuch.txt"
expect_fail "a list naming powercut-no-such-package fails, naming it as not in the archive" \
	"not in the archive (the fresh root's apt has no candidate): powercut-no-such-package" \
	"$ROOT/tools/fresh-root-check" --extra-list "$T/nosuch.txt"
check "install-deps in the root named it too" \
	grep -q "install-deps: FAILED: Debian's archive (as apt sees it) has no: powercut-no-such-package" \
	"$ROOT/build/fresh-root/extra1.log"

printf 'libjson-c-dev:arm64\n' > "$T/foreign.txt"
expect_fail "a list naming libjson-c-dev:arm64 for tools/install-deps fails (no arm64 in a fresh root)" \
	"not installed: libjson-c-dev:arm64" \
	"$ROOT/tools/fresh-root-check" --extra-list "$T/foreign.txt"

printf 'jq\n' > "$T/jq.txt"
out=$("$ROOT/tools/fresh-root-check" --extra-list "$T/jq.txt" 2>&1); rc=$?
if [ $rc = 0 ] && printf '%s\n' "$out" | grep -Eq '^  extra1 +1 packages +[0-9]+ s  PASS$'; then
	ok "a list that installs (jq) passes"
else
	bad "a list naming jq: exit $rc: $(printf '%s' "$out" | tail -3)"
fi
check "the roots are removed after (their mounts were gone)" test ! -e "$ROOT/build/fresh-root/root-extra1"
finish
