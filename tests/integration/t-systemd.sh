#!/bin/bash
# The systemd units: `make install-host install-agent DESTDIR=... PREFIX=/usr`
# puts the host's powercut@.service and the agent's powercut-agent.service in
# $(PREFIX)/lib/systemd/system (or SYSTEMDDIR), their ExecStart pointed at
# $(PREFIX)/bin; the campaign unit restarts on failure but takes exit 1 (a
# FAIL) and 3 (INCOMPLETE) as the campaign's result; `systemd-analyze verify`
# accepts both units, when it is installed. `make install` is the host's part
# alone: nothing of the board's (no /etc at all); install-agent without a
# DESTDIR stops before it writes anything.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# a make of our own, not a sub-make of `make check`'s jobserver; the binaries
# of $PC_BIN as they are (the sanitized build's flags, when it is that one)
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory -C "$ROOT" "$@"; }
case "$BIN" in
*san) OPTS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" ;;
*) OPTS="-O2 -g" ;;
esac
BABS=$(cd "$BIN" && pwd)

I="$T/inst"
mk install-host install-agent B="$BABS" OPT="$OPTS" DESTDIR="$I" PREFIX=/usr > "$T/install.log" 2>&1
rc=$?
check "make install-host install-agent DESTDIR PREFIX=/usr (exit $rc)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || { tail -5 "$T/install.log"; finish; }
U="$I/usr/lib/systemd/system"
check "powercut@.service installed in PREFIX/lib/systemd/system" [ -f "$U/powercut@.service" ]
check "powercut-agent.service installed there too" [ -f "$U/powercut-agent.service" ]
check "the units are mode 0644" [ "$(stat -c %a "$U/powercut@.service" "$U/powercut-agent.service" | sort -u)" = 644 ]
check "the binaries are installed in PREFIX/bin" test -x "$I/usr/bin/powercut" -a -x "$I/usr/bin/powercut-agent"
check "no temporary file left" [ -z "$(find "$I" -name '*.tmp')" ]
unit="$U/powercut@.service"
check "the campaign unit runs /etc/powercut/%i.json into /var/lib/powercut/results/%i" \
	grep -qx 'ExecStart=/usr/bin/powercut run /etc/powercut/%i.json --results /var/lib/powercut/results/%i' "$unit"
check "it restarts on failure, after RestartSec" sh -c "grep -qx 'Restart=on-failure' '$unit' && grep -qE '^RestartSec=[0-9]+' '$unit'"
check "exit 1 (FAIL) and 3 (INCOMPLETE) are its result, not failures" grep -qx 'SuccessExitStatus=1 3' "$unit"

# `make install`: the host's part, nothing of the board's
H="$T/host"
mk install B="$BABS" OPT="$OPTS" DESTDIR="$H" PREFIX=/usr > "$T/install-host.log" 2>&1
rc=$?
check "make install DESTDIR PREFIX=/usr (exit $rc)" [ $rc -eq 0 ]
check "make install: powercut and its unit" test -x "$H/usr/bin/powercut" -a -f "$H/usr/lib/systemd/system/powercut@.service"
check "make install: no agent, no file in /etc ($(cd "$H" && find . -name '*agent*' -o -path './etc*' | head -3))" \
	test ! -e "$H/usr/bin/powercut-agent" -a ! -e "$H/etc" -a ! -e "$H/usr/lib/systemd/system/powercut-agent.service"
# install-agent with no DESTDIR stops (its paths pointed into $T, should the
# stop ever go: it must not write the host's /etc)
mk install-agent B="$BABS" OPT="$OPTS" DESTDIR= PREFIX="$T/noprefix" SYSCONFDIR="$T/noetc" > "$T/install-nodest.log" 2>&1
rc=$?
check "make install-agent without DESTDIR stops (exit $rc)" [ $rc -eq 2 ]
check "it says to give DESTDIR" grep -q 'give DESTDIR=ROOT' "$T/install-nodest.log"
check "it wrote nothing" test ! -e "$T/noprefix" -a ! -e "$T/noetc"

# another prefix and SYSTEMDDIR
mk install-host install-agent B="$BABS" OPT="$OPTS" DESTDIR="$T/inst2" PREFIX=/opt/pc SYSTEMDDIR=/etc/systemd/system > "$T/install2.log" 2>&1
rc=$?
if ! check "make install-host install-agent PREFIX=/opt/pc SYSTEMDDIR=/etc/systemd/system (exit $rc)" [ $rc -eq 0 ]; then
	tail -5 "$T/install2.log"
fi
check "the units go to SYSTEMDDIR" [ -f "$T/inst2/etc/systemd/system/powercut@.service" ]
check "their ExecStart follows PREFIX" sh -c "grep -q '^ExecStart=/opt/pc/bin/powercut run ' '$T/inst2/etc/systemd/system/powercut@.service' &&
	grep -q '^ExecStart=/opt/pc/bin/powercut-agent run ' '$T/inst2/etc/systemd/system/powercut-agent.service'"

# the binary the unit runs takes the unit's command line
"$I/usr/bin/powercut" run --help > /dev/null 2>&1
rc=$?
check "the installed powercut runs (exit $rc)" [ $rc -eq 0 ]

if command -v systemd-analyze > /dev/null 2>&1; then
	# offline: the units as installed, their ExecStart pointed at DESTDIR
	# (verify checks that the command exists); any warning is a failure
	mkdir -p "$T/verify"
	for u in powercut@.service powercut-agent.service; do
		sed "s|/usr/bin/powercut|$I/usr/bin/powercut|" "$U/$u" > "$T/verify/$u"
		systemd-analyze verify --man=no "$T/verify/$u" > "$T/verify/$u.out" 2>&1
		rc=$?
		check "systemd-analyze verify $u: exit 0, no warning (exit $rc: $(head -c 300 "$T/verify/$u.out"))" \
			test $rc -eq 0 -a ! -s "$T/verify/$u.out"
	done
	# and a broken unit is caught the same way (the check means something)
	sed 's/^Restart=on-failure/Restart=sometimes/' "$T/verify/powercut@.service" > "$T/verify/broken@.service"
	systemd-analyze verify --man=no "$T/verify/broken@.service" > "$T/verify/broken.out" 2>&1
	check "systemd-analyze verify catches a bad Restart=" [ -s "$T/verify/broken.out" ]
else
	skip_part "systemd-analyze is not installed: the units were not verified"
fi
finish
