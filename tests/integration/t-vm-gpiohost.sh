#!/bin/bash
# The gpiod relay on a real kernel driver (docs/relays.md#the-gpio-relay-on-a-
# real-kernel): powercut's static armhf host daemon, built against libgpiod
# 1.6 and 2.1, runs inside the relay-host VM (tools/board/mkgpiohost: QEMU
# 10's ast2600-evb, Debian's armmp kernel, gpio-aspeed) and requests lines of
# /dev/gpiochip0; the kernel's driver writes QEMU's model of the AST2600 GPIO
# controller; tests/tools/gpiobridge, on this host, reads the pins over QMP
# (gpioA0, gpioA1: offsets 0 and 1) and starts or SIGKILLs a sim board's
# agent for each; each agent talks to the daemon over a serial link (a pty
# pair to the guest's UART1 / UART2, ttyS0 / ttyS1).
#
# For each libgpiod: a campaign of PC_VM_GPIO_CYCLES (10) cycles on an honest
# board (PASS) and a lying-flush board (FAIL), then the kernel's behaviour on
# a line, each case measured on the pin by the bridge (transitions between
# the guest's "pc-case: begin/end" lines, one clock): observe, a holder's on,
# SIGKILL of the holder, a new holder that resumes, EBUSY from a second
# process, off, release, active_low both ways, a wrong line name.
# One boot runs everything (about 2 minutes under TCG: an armhf guest;
# PC_VM_GPIO_TIMEOUT, 480 s, bounds QEMU), so `make
# check` skips it; `make vm-check` runs it (PC_VM_REQUIRE=1: a skip fails).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

CYCLES=${PC_VM_GPIO_CYCLES:-10}
[ "${PC_VM:-0}" = 1 ] || [ "${PC_VM_REQUIRE:-0}" = 1 ] ||
	vm_skip "the relay-host VM takes minutes under TCG; run it with 'make vm-check' (or PC_VM=1)"
G=${PC_VM_DIR:-build/vm}/gpiohost
for f in zImage aspeed-ast2600-evb-links.dtb initrd.img qemu-system-arm; do
	[ -e "$G/$f" ] || vm_skip "$G/$f is missing: build the relay-host VM with 'make vm-image-gpiohost'"
done
newer=$(find relay harness common agent -name '*.[ch]' -newer "$G/initrd.img" 2>/dev/null | head -1)
[ -z "$newer" ] || vm_skip "$newer is newer than $G/initrd.img: rebuild the daemons in it with 'make vm-image-gpiohost'"
for f in "$TOOLS/ptypair" "$TOOLS/gpiobridge" "$AGENT"; do
	[ -x "$f" ] || vm_skip "$f is not built"
done

pids=""
trap 'pc_rc=$?; kill $pids 2>/dev/null; rm_T' EXIT
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$T/agent.key"
chmod 0600 "$T/agent.key"
for b in honest lying; do
	"$TOOLS/ptypair" "$T/ptys-$b" & pids="$pids $!"
	"$AGENT" prepare --device "sim:$T/$b.img" --size 1M --record-size 4096 --yes > "$T/prepare-$b.log" 2>&1 ||
		bad "prepare the sim board $b: $(tail -1 "$T/prepare-$b.log")"
done
for b in honest lying; do
	for _ in $(seq 300); do [ -s "$T/ptys-$b" ] && break; sleep 0.1; done
done
agent_cmd() { # BOARD PROFILE: what the bridge runs when the board's pin goes high
	echo "exec $PWD/$AGENT run --fresh-boot-id --device sim:$T/$1.img --sim-profile $2 --console $(sed -n 2p "$T/ptys-$1") --key $T/agent.key --board $1 >> $T/agent-$1.log 2>&1"
}

# ---- what the guest runs ------------------------------------------------------
mkdir -p "$T/ir/pc"
cp "$T/agent.key" "$T/ir/pc/agent.key"
board_json() { # NAME LINE TTY
	cat <<JSON
    { "name": "$1", "device": { "backend": "sim", "record_size": 4096 },
      "relay": { "driver": "gpiod", "chip": "gpiochip0", "line": $2 },
      "link": { "type": "serial", "device": "/dev/$3", "baud": 115200 },
      "modes": ["fua", "flush"], "records_per_cycle": 64, "flush_every": 8,
      "cut": { "at": "acks", "acks": [16, 48] },
      "boot_timeout_ms": 60000, "verify_timeout_ms": 60000, "off_ms": 50 }
JSON
}
cat > "$T/ir/pc/c.json" <<JSON
{ "campaign": "it-vm-gpiohost", "cycles": $CYCLES, "seed": 39, "key_file": "/pc/agent.key", "results_min_free": "8M",
  "boards": [
$(board_json honest 0 ttyS0),
$(board_json lying 1 ttyS1)
  ] }
JSON
kcfg() { # FILE LINE ACTIVE_LOW: one board, kb, on line LINE of gpiochip0
	cat > "$T/ir/pc/$1" <<JSON
{ "campaign": "it-vm-gpio-kernel", "cycles": 1, "key_file": "/pc/agent.key", "results_min_free": "8M",
  "boards": [ { "name": "kb", "device": { "backend": "sim", "record_size": 4096 },
                "relay": { "driver": "gpiod", "chip": "gpiochip0", "line": $2, "active_low": $3 },
                "link": { "type": "serial", "device": "/dev/ttyS0", "baud": 115200 } } ] }
JSON
}
# the run daemon killed and resumed: board honest alone, a few cycles, each
# on for long enough (200 records, of the 254 slots a 1 MiB sim board has;
# a cut after 120-180 acknowledged records: about a
# second under TCG) that the guest sees its line high and kills the daemon
# before the cycle's own cut
cat > "$T/ir/pc/cr.json" <<JSON
{ "campaign": "it-vm-gpio-resume", "cycles": 4, "seed": 40, "key_file": "/pc/agent.key", "results_min_free": "8M",
  "boards": [
$(board_json honest 0 ttyS0 | sed 's/"records_per_cycle": 64/"records_per_cycle": 200/; s/"acks": \[16, 48\]/"acks": [120, 180]/')
  ] }
JSON
kcfg k.json 0 false
kcfg kl.json 0 true
kcfg kbad.json '"NO_SUCH_LINE"' false
cat > "$T/ir/pc/run.sh" <<'SH'
#!/bin/sh
# the guest's part of t-vm-gpiohost.sh: everything goes to /out
export POWERCUT_LOCK_DIR=/tmp/locks
mkdir -p $POWERCUT_LOCK_DIR
begin() { echo "pc-case: begin $1"; }
end() { sleep 1; echo "pc-case: end $1"; }
run() { # CASE COMMAND...: output and status in /out/CASE.out, .rc
	c=$1; shift
	"$@" > /out/$c.out 2>&1
	echo $? > /out/$c.rc
	sed "s/^/pc-out $c: /" /out/$c.out | head -5
}
holder() { sed -n 's/.*holder pid \([0-9]*\).*/\1/p' /out/$1.out; }
for v in 1 2; do
	P=/bin/powercut-gpiod$v
	echo "pc-case: libgpiod v$v: $($P --version 2>&1 | head -1)"
	begin v$v-campaign
	run v$v-campaign $P run /pc/c.json --results /out/r$v --quiet --no-report
	end v$v-campaign
	# the kernel's behaviour, measured on the pin (gpioA0) by the bridge
	begin v$v-observe; run v$v-observe $P relay /pc/k.json kb get; end v$v-observe
	begin v$v-on; run v$v-on $P relay /pc/k.json kb on; end v$v-on
	h=$(holder v$v-on)
	begin v$v-ebusy
	POWERCUT_LOCK_DIR=/tmp/other run v$v-ebusy $P relay /pc/k.json kb get
	end v$v-ebusy
	begin v$v-kill; kill -KILL "$h"; sleep 0.5; end v$v-kill
	begin v$v-after-kill; run v$v-after-kill $P relay /pc/k.json kb get; end v$v-after-kill
	begin v$v-resume; run v$v-resume $P relay /pc/k.json kb on; end v$v-resume
	begin v$v-off; run v$v-off $P relay /pc/k.json kb off; end v$v-off
	begin v$v-release; run v$v-release $P relay /pc/k.json kb release; end v$v-release
	# active_low: on is a low line, off a high one
	begin v$v-al-on; run v$v-al-on $P relay /pc/kl.json kb on; end v$v-al-on
	begin v$v-al-off; run v$v-al-off $P relay /pc/kl.json kb off; end v$v-al-off
	begin v$v-al-release; run v$v-al-release $P relay /pc/kl.json kb release; end v$v-al-release
	begin v$v-al-back; run v$v-al-back $P relay /pc/k.json kb off; end v$v-al-back
	begin v$v-al-back-release; run v$v-al-back-release $P relay /pc/k.json kb release; end v$v-al-back-release
	begin v$v-badname
	run v$v-badname $P run /pc/kbad.json --results /out/rbad$v --quiet --no-report
	end v$v-badname
	# the campaign daemon SIGKILLed while its board is on, then resumed
	# (line 0's global number in debugfs: gpiochip0's base)
	g=gpio-$(sed -n 's/^gpiochip0: GPIOs \([0-9]*\)-.*/\1/p' /sys/kernel/debug/gpio)
	$P run /pc/cr.json --results /out/rr$v --quiet --no-report > /out/v$v-daemon.out 2>&1 &
	d=$!
	i=0
	while ! grep -q "$g .*out hi" /sys/kernel/debug/gpio && [ $i -lt 600 ]; do usleep 50000; i=$((i + 1)); done
	grep "$g " /sys/kernel/debug/gpio | sed "s/^/pc-out v$v-daemon-kill: before: /"
	begin v$v-daemon-kill
	kill -KILL $d
	sleep 1
	grep "$g " /sys/kernel/debug/gpio | sed "s/^/pc-out v$v-daemon-kill: after: /"
	end v$v-daemon-kill
	i=0	# its relay worker, a child, until it is gone too
	while grep -q "$g .*powercut" /sys/kernel/debug/gpio && [ $i -lt 100 ]; do usleep 50000; i=$((i + 1)); done
	echo "pc-out v$v-daemon-kill: the line's holder gone after $((i * 50)) ms"
	begin v$v-daemon-resume
	run v$v-daemon-resume $P run /pc/cr.json --results /out/rr$v --quiet --no-report
	end v$v-daemon-resume
	cat /sys/kernel/debug/gpio > /out/v$v-debug-gpio 2>&1
done
SH
chmod 0755 "$T/ir/pc/run.sh"
(cd "$T/ir" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | gzip > "$T/pc.cpio.gz"
cat "$G/initrd.img" "$T/pc.cpio.gz" > "$T/initrd.img"

# ---- the VM and the bridge ------------------------------------------------------
L=$T/bridge.log
t0=$(date +%s)
"$TOOLS/gpiobridge" --console "$T/con.sock" --qmp "$T/qmp.sock" --log "$L" \
	--pin "gpioA0=$(agent_cmd honest honest)" --pin "gpioA1=$(agent_cmd lying lying-flush)" &
bpid=$!
pids="$pids $bpid"
QEMU_MODULE_DIR=$PWD/$G/qemu/usr/lib/x86_64-linux-gnu/qemu timeout "${PC_VM_GPIO_TIMEOUT:-480}" \
	"$G/qemu-system-arm" -M ast2600-evb -m 512 -display none -no-reboot -monitor none \
	-kernel "$G/zImage" -dtb "$G/aspeed-ast2600-evb-links.dtb" -initrd "$T/initrd.img" \
	-append "console=ttyS4,115200 quiet" \
	-chardev "socket,id=con,path=$T/con.sock,server=on,wait=on" -serial chardev:con \
	-serial "$(sed -n 1p "$T/ptys-honest")" -serial "$(sed -n 1p "$T/ptys-lying")" \
	-qmp "unix:$T/qmp.sock,server=on,wait=off" > "$T/qemu.log" 2>&1
qrc=$?
wait $bpid
brc=$?
wall=$(($(date +%s) - t0))
check "QEMU ran the relay-host VM to its end (exit $qrc) in ${wall}s" [ $qrc -eq 0 ]
check "the bridge saw QEMU exit (exit $brc)" [ $brc -eq 0 ]
[ $qrc -eq 0 ] || tail -5 "$T/qemu.log"
grep -m3 'pc-gpiohost\|pc-case: libgpiod' "$L" | sed 's/^[0-9.]* console /    /'
sed -n '/console pc-out: begin/,/console pc-out: end/p' "$L" | sed '1d;$d' | sed 's/^[0-9.]* console //' | tr -d ' ' |
	base64 -d 2>/dev/null | gzip -dc 2>/dev/null > "$T/out.tar"
mkdir -p "$T/out"
tar -C "$T/out" -xf "$T/out.tar" 2>/dev/null
check "the guest sent its results back" [ -s "$T/out/v1-campaign.rc" ]
O=$T/out

# ---- the campaigns -------------------------------------------------------------
for v in 1 2; do
	V=$O/r$v/verdicts.jsonl
	rc=$(cat "$O/v$v-campaign.rc" 2>/dev/null)
	check "libgpiod v$v: the campaign ends FAIL (exit 1: the lying board), was ${rc:-none}" [ "$rc" = 1 ]
	[ "$rc" = 1 ] || tail -5 "$O/v$v-campaign.out" 2>/dev/null
	for b in honest lying; do
		echo "    v$v $b: $(jq -r "select(.board == \"$b\") | .verdict" "$V" 2>/dev/null | sort | uniq -c | tr '\n' ' ')"
	done
	check "libgpiod v$v: honest: $CYCLES verdicts, every one PASS" \
		[ "$(jq -s '[.[] | select(.board == "honest" and .verdict == "PASS")] | length' "$V" 2>/dev/null)" = "$CYCLES" ]
	check "libgpiod v$v: lying: $CYCLES verdicts, none INFRA_ERROR or BOOT_FAIL" \
		[ "$(jq -s '[.[] | select(.board == "lying" and (.verdict == "PASS" or .verdict == "FAIL"))] | length' "$V" 2>/dev/null)" = "$CYCLES" ]
	check "libgpiod v$v: lying: a flush cycle FAILs" \
		[ "$(jq -s '[.[] | select(.board == "lying" and .verdict == "FAIL")] | length' "$V" 2>/dev/null)" -gt 0 ]
done

# ---- the pins -------------------------------------------------------------------
# pin events between a case's begin and end: "L1 L2 ..." (the levels it went to)
pin_moves() { # CASE [PIN]
	awk -v c="$1" -v p="${2:-gpioA0}" '
		$2 == "console" && $3 == "pc-case:" && $4 == "begin" && $5 == c { on = 1; next }
		$2 == "console" && $3 == "pc-case:" && $4 == "end" && $5 == c { on = 0 }
		on && $2 == "pin" && $3 == p && $5 == "power" { printf "%s ", $4 }' "$L"
}
level_at() { # CASE: gpioA0's level at the case's begin
	awk -v c="$1" '
		$2 == "pin" && $3 == "gpioA0" && $4 == "initial" { l = $5 }
		$2 == "pin" && $3 == "gpioA0" && $5 == "power" { l = $4 }
		$2 == "console" && $3 == "pc-case:" && $4 == "begin" && $5 == c { print l; exit }' "$L"
}
case_check() { # CASE WANTED-MOVES WHAT
	local m
	m=$(pin_moves "$1")
	echo "    pin gpioA0, $1: level $(level_at "$1") at the start, moves: ${m:-none}"
	check "$1: $3 (pin moves: ${m:-none}, wanted ${2:-none})" [ "$m" = "$2" ]
}
for v in 1 2; do
	case_check v$v-observe "" "relay get (the line requested as is) leaves the pin alone"
	check "v$v-observe: reads off" grep -qx off "$O/v$v-observe.out"
	case_check v$v-on "1 " "relay on: one commanded move, to high"
	case_check v$v-ebusy "" "a second process's request leaves the pin alone"
	check "v$v-ebusy: the kernel refused it (EBUSY) and powercut says so, naming chip and line" \
		sh -c "[ \"\$(cat '$O/v$v-ebusy.rc')\" != 0 ] && grep -q 'busy' '$O/v$v-ebusy.out' && grep -q 'gpiochip0' '$O/v$v-ebusy.out'"
	case_check v$v-kill "" "SIGKILL of the holder: the kernel keeps the line driven high"
	case_check v$v-after-kill "" "relay get after the kill leaves the pin alone"
	echo "    v$v after the kill, relay get says: $(head -c 200 "$O/v$v-after-kill.out" | tr '\n' ' ')"
	check "v$v-after-kill: reads on (the line stayed high)" grep -qx on "$O/v$v-after-kill.out"
	case_check v$v-resume "" "a new holder for on (resume) takes the high line without a glitch"
	case_check v$v-off "0 " "relay off: one commanded move, to low"
	case_check v$v-release "" "release: the kernel keeps the line low"
	check "v$v-release: powercut does not say the line fell to its pull (it did not)" \
		sh -c "grep -q 'gpio-aspeed keeps its level' '$O/v$v-release.out' && ! grep -q 'a GPIO line falls to its pull' '$O/v$v-release.out'"
	case_check v$v-al-on "" "active_low on: the line stays low (on is low)"
	case_check v$v-al-off "1 " "active_low off: one move, to high"
	case_check v$v-al-release "" "active_low release: the line stays high"
	case_check v$v-al-back "0 " "active high off again: one move, to low"
	check "v$v-badname: a wrong line name: powercut run stops before any cycle, an error (exit 2), no verdict" \
		sh -c "[ \"\$(cat '$O/v$v-badname.rc' 2>/dev/null)\" = 2 ] && [ ! -s '$O/rbad$v/verdicts.jsonl' ]"
	echo "    v$v-badname (exit $(cat "$O/v$v-badname.rc" 2>/dev/null)): $(grep -m1 'error' "$O/v$v-badname.out")"
	check "v$v-badname: the error names the chip and the line" \
		sh -c "grep -q 'gpiochip0' '$O/v$v-badname.out' && grep -q 'NO_SUCH_LINE' '$O/v$v-badname.out'"
	# the run daemon: SIGKILLed with its board on, resumed
	grep "console pc-out v$v-daemon-kill" "$L" | sed 's/^[0-9.]* console pc-out /    /'
	check "v$v-daemon-kill: the daemon was killed with its board on (the pin high)" [ "$(level_at v$v-daemon-kill)" = 1 ]
	case_check v$v-daemon-kill "" "SIGKILL of powercut run with the board on: the line stays high"
	m=$(pin_moves v$v-daemon-resume)
	echo "    pin gpioA0, v$v-daemon-resume: level $(level_at v$v-daemon-resume) at the start, moves: ${m:-none}"
	check "v$v-daemon-resume: the resumed daemon's first move is its cut at open (to low), no ON before it" \
		[ "${m%% *}" = 0 ]
	# (exit 3 INCONCLUSIVE too: a cut through the guest's pin, the bridge's
	# poll and a SIGKILL can come after a sim board's writes under load)
	check "v$v-daemon-resume: the resumed campaign ends PASS (exit 0, or 3 INCONCLUSIVE; was $(cat "$O/v$v-daemon-resume.rc" 2>/dev/null))" \
		passed_or_late "$(cat "$O/v$v-daemon-resume.rc" 2>/dev/null || echo none)" "$O/rr$v"
	echo "    v$v-daemon-resume verdicts: $(jq -r .verdict "$O/rr$v/verdicts.jsonl" 2>/dev/null | sort | uniq -c | tr '\n' ' ')"
done

# ---- the bridge's own latency ----------------------------------------------------
lat=$(awk '$2 == "pin" && $5 == "power" { n++; s += $10; if ($10 > m) m = $10; b += $12; if ($12 > mb) mb = $12 }
	END { if (n) printf "%d switches: pin change seen to power switched mean %d us, max %d us; since the last sample of the old level mean %d us, max %d us", n, s / n, m, b / n, mb }' "$L")
echo "    bridge latency: ${lat:-no switches}"
sum=$(awk '$2 == "summary" { print $4, $7, $9 }' "$L")
echo "    bridge's own summary: $(grep -m1 ' summary ' "$L" | cut -d' ' -f3-)"
nsw=$(awk '$2 == "pin" && $5 == "power"' "$L" | wc -l)
check "the bridge switched power ($nsw switches in its log)" [ "$nsw" -gt 0 ]
check "the bridge's summary counts every switch its log shows ($sum)" [ "${sum%% *}" = "$nsw" ]
echo "    ${wall}s for the whole VM run ($CYCLES cycles x 2 boards x 2 libgpiod, the kernel cases)"
finish
