#!/bin/bash
# A KVM that fails the guest is a KVM that does not work (issue 36).
#
# On nested virtualisation /dev/kvm can open and a machine start under
# -accel kvm, and then the guest kernel dies in QEMU's "KVM internal error.
# Suberror: 1" / "emulation failure" (or hangs without a word on its
# console) at every power-on: a probe that runs a machine without a kernel
# cannot see it, and every cycle would be a boot timeout blamed on the card.
#
# Here KVM works or is absent, so a QEMU wrapper makes the failure: asked
# for -accel kvm it runs the real guest under TCG for a moment, then prints
# QEMU's own words of the failure and exits, as a failing KVM would. Two
# ways it fails:
#   - every KVM run (the probe too): accel "auto"'s probe, which boots the
#     board's own kernel to its first console line, must see it and choose
#     TCG at open; accel "kvm" is refused quoting QEMU;
#   - only the board's power-ons (the probe boots): the power-on that KVM
#     failed is the host's, never the device's: the board falls back to TCG
#     once, said in qemu.log, on stderr, in <state>/kvm-failed and in the
#     next power-on's console log, its later power-ons run TCG, the campaign
#     passes every cycle, and no BOOT_FAIL is recorded; opened again, the
#     board stays on TCG;
#   - only the board's second power-on, with boot_retries 0 (no retry to
#     boot under TCG): the harness asks the relay (host_fault) before it
#     judges, and that cycle is an INFRA_ERROR (cause host_fault), at once,
#     not a BOOT_FAIL.
#
# Takes 1-2 minutes under software emulation (one boot timeout is spent on
# the power-on KVM failed), so `make check` skips it: `make vm-check` runs it
# (PC_VM_REQUIRE=1: a skip is a failure there), and PC_VM=1 from run-all.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
passes=0
ok() { echo "  ok: $*"; passes=$((passes + 1)); }

CYCLES=${PC_VM_KVM_CYCLES:-3}
BOOT_MS=${PC_VM_KVM_BOOT_MS:-45000}
vm_setup "the virtual board with a failing KVM takes 1-2 min under TCG"
QEMU=$(command -v qemu-system-x86_64)
PCA=$(realpath "$PC")	# the relay by hand keeps its state in ./results: run in $T
VM=$(realpath "$VM")

"$TOOLS/ptypair" "$T/ptys" & cable=$!
trap 'pc_rc=$?; kill $cable 2>/dev/null; rm_T' EXIT
for _ in $(seq 300); do [ -s "$T/ptys" ] && break; sleep 0.1; done
host_end=$(sed -n 1p "$T/ptys"); board_end=$(sed -n 2p "$T/ptys")
check "a pty pair stands in for the serial cable" test -c "$board_end"

# QEMU on a host whose KVM fails the guest. $T/kvm-mode: "all" fails every
# -accel kvm run, "guest" every one but the probe's (-name pc-kvm-probe),
# "second" only the board's second power-on under KVM; the others run under
# TCG. Each KVM run is listed in $T/kvm-attempts.
cat > "$T/qemu-kvmfail" <<SH
#!/bin/bash
args=() kvm=0 probe=0 prev=
for a in "\$@"; do
	case "\$prev \$a" in
	"-accel kvm") a=tcg kvm=1 ;;
	"-cpu host") a=max ;;
	"-name pc-kvm-probe") probe=1 ;;
	esac
	args+=("\$a")
	prev=\$a
done
[ \$kvm = 1 ] || exec "$QEMU" "\$@"
echo "probe=\$probe \$*" >> "$T/kvm-attempts"
mode=\$(cat "$T/kvm-mode")
[ \$probe = 1 ] && [ "\$mode" != all ] && exec "$QEMU" "\${args[@]}"
[ "\$mode" = second ] && [ "\$(grep -c '^probe=0' "$T/kvm-attempts")" -ne 2 ] && exec "$QEMU" "\${args[@]}"
# the guest runs a while: the probe's not to its first console line (1 s
# or more under TCG), a power-on's into its kernel, not to the agent's
# hello (3 s or more)...
"$QEMU" "\${args[@]}" & q=\$!
if [ \$probe = 1 ]; then sleep 0.3; else sleep 1.5; fi
kill -KILL \$q
wait \$q 2>/dev/null
# ...then KVM fails it: QEMU's words (accel/kvm/kvm-all.c) and registers
cat >&2 <<'ERR'
KVM internal error. Suberror: 1
emulation failure
RAX=0000000000000001 RBX=ffff9a0a41c3a000 RCX=ffff9a0a41c3a010 RDX=0000000000000000
RIP=ffffffff8d2f1a3e RFL=00010246 [---Z-P-] CPL=0 II=0 A20=1 SMM=0 HLT=0
Code=48 8b 4e 08 f0 48 0f c7 0f <0f> 94 c0 84 c0 74 1d 5b 5d c3
ERR
exit 1
SH
chmod +x "$T/qemu-kvmfail"

cp "$VM/sd.img" "$T/sd.img"
cat > "$T/c.json" <<JSON
{ "campaign": "it-vm-kvm", "cycles": $CYCLES, "seed": 36,
  "boards": [ { "name": "vm1",
    "device": { "backend": "posix", "record_size": $record_size, "path": "PARTLABEL=$partlabel" },
    "link": { "type": "serial", "device": "$host_end", "baud": 115200,
              "boot_patterns": ["Linux version", "mmcblk0: p1", "pc-init: starting"] },
    "relay": { "driver": "qemu", "qemu": "$T/qemu-kvmfail", "kernel": "$VM/kernel", "initrd": "$VM/initrd.img",
               "drive": "$T/sd.img", "console": "$board_end", "memory_mb": 256 },
    "modes": ["fua", "flush"], "records_per_cycle": 200,
    "cut": { "at": "mix", "window_ms": [30, 400] },
    "boot_timeout_ms": $BOOT_MS, "verify_timeout_ms": 180000, "off_ms": 20 } ] }
JSON
check "the campaign, its qemu a wrapper, is valid" "$PC" check-config "$T/c.json"

# 1. KVM fails every guest, the probe's too: TCG from open
echo all > "$T/kvm-mode"
jq '.boards[0].relay.accel = "kvm"' "$T/c.json" > "$T/kvm.json"
expect_fail "accel kvm is refused at open, quoting QEMU's emulation failure" \
	"accel \"kvm\": KVM does not work here: the board's kernel under -accel kvm -cpu host: QEMU said \"KVM internal error. Suberror: 1; emulation failure\"" \
	env -C "$T" "$PCA" relay kvm.json vm1 on
check "...and QEMU was run once, as the probe (-name pc-kvm-probe, the board's kernel)" \
	[ "$(grep -c "^probe=1 .*-kernel $VM/kernel -initrd $VM/initrd.img" "$T/kvm-attempts")" -eq 1 ]
( cd "$T" && "$PCA" relay c.json vm1 on && "$PCA" relay c.json vm1 off ) > "$T/hand.out" 2>&1
check "accel auto: the board switches on and off by hand" grep -q "relay off done" "$T/hand.out"
# (an idle machine's TCG can print the kernel's first line within the 0.3 s:
# the probe then says the failure came after it, within its 200 ms)
check "...saying the fallback once, quoting QEMU" \
	[ "$(grep -cE 'relay qemu: KVM does not work here \(the board.s kernel under -accel kvm -cpu host: QEMU said "KVM internal error. Suberror: 1; emulation failure"( after the kernel.s first console line)?\); the virtual boards run under software emulation \(TCG\)' "$T/hand.out")" -eq 2 ]
HL="$T/results/it-vm-kvm/boards/vm1/qemu.log"
check "...qemu.log says why the board runs TCG" \
	grep -q '^--- board vm1 opened at .*: accel tcg (relay.accel "auto": KVM does not work here; KVM probe: the board.s kernel under -accel kvm -cpu host: QEMU said "KVM internal error. Suberror: 1; emulation failure"' "$HL"
check "...and its power-on ran -accel tcg -cpu max" \
	[ "$(grep '^--- power on' "$HL" | grep -c -- '-accel tcg -cpu max ')" -eq 1 ]

# 2. KVM runs the probe's kernel, then fails the board's first power-on
echo guest > "$T/kvm-mode"
rm -f "$T/kvm-attempts"
start=$(date +%s)
"$PC" run "$T/c.json" --results "$T/r" --quiet --no-report > "$T/out" 2>&1
rc=$?
wall=$(($(date +%s) - start))
Q="$T/r/boards/vm1/qemu.log"
# Open (docs/vm.md): in both fresh-clone .ci/run runs of 2026-12-07 this
# board, once on TCG, sent scan_begin and then nothing until the verify
# timeout (180 s) in 2 of its 5 power-ons (cycle 1's and the final
# verification's first), though t-vm's board, the same image on TCG, does
# not, and this test's own runs beside no other suite passed all 3 cycles.
# Such a power-on is an INFRA_ERROR, never a device verdict: what this test
# proves is the fallback and that the device is not blamed; the stall is
# said, counted, and left for its own work.
if ! check "the campaign ends, no device verdict against the part (exit 0, or 3 with INFRA_ERROR cycles; was $rc, $wall s)" \
	rc_in $rc 0 3; then
	tail -5 "$T/out"; grep -a '^---' "$Q" | cut -c1-300 | tail -6
fi
V="$T/r/verdicts.jsonl"
E="$T/r/events.jsonl"
npass=$(jq -s '[.[] | select(.verdict == "PASS")] | length' "$V")
ninfra=$(jq -s '[.[] | select(.verdict == "INFRA_ERROR")] | length' "$V")
[ "$ninfra" -eq 0 ] || echo "  (open) $ninfra INFRA_ERROR cycle(s): $(jq -r 'select(.verdict == "INFRA_ERROR") | "cycle \(.cycle): \(.reason)"' "$V" | tr '\n' ';')"
check "every cycle PASS or INFRA_ERROR, at least one PASS under TCG after the fallback ($npass PASS, $ninfra INFRA_ERROR of $CYCLES)" \
	sh -c '[ "$1" -ge 1 ] && [ $(($1 + $2)) -eq "$3" ]' _ "$npass" "$ninfra" "$CYCLES"
check "no BOOT_FAIL, no give-up: the device is never blamed for the host's KVM" \
	[ "$(jq -s '[.[] | select(.ev == "boot_fail" or .ev == "final_boot_fail" or .ev == "give_up")] | length' "$E")" -eq 0 ]
check "the probe booted under KVM, then one power-on did" \
	[ "$(cut -d' ' -f1 "$T/kvm-attempts" | tr '\n' ' ')" = "probe=1 probe=0 " ]
check "qemu.log: the board opened under KVM, the probe's kernel having printed its first line" \
	grep -q '^--- board vm1 opened at .*: accel kvm (relay.accel "auto"; KVM probe: the board.s kernel under -accel kvm -cpu host printed its first console line after' "$Q"
check "qemu.log says why it fell back, quoting QEMU, once" \
	[ "$(grep -c '^--- KVM failed this power-on.s guest (QEMU said "KVM internal error. Suberror: 1; emulation failure"): the host.s failure, not the device.s; falling back to TCG, once' "$Q")" -eq 1 ]
ons=$(grep '^--- power on' "$Q" | sed 's/.* -accel \([a-z]*\) .*/\1/' | tr '\n' ' ')
echo "  power-ons' accelerators: $ons"
check "the first power-on ran KVM, every later one TCG ($((CYCLES + 2)) power-ons or more)" \
	sh -c '[ "$(echo "$1" | cut -d" " -f1)" = kvm ] && [ "$(echo "$1" | cut -d" " -f2- | tr " " "\n" | grep -vc "^tcg$\|^$")" -eq 0 ] &&
		[ "$(echo "$1" | wc -w)" -ge "$2" ]' _ "$ons" $((CYCLES + 2))
check "the harness said it on stderr" \
	grep -q "board vm1: relay qemu: KVM failed the guest of a power-on (QEMU said \"KVM internal error. Suberror: 1; emulation failure\"): the host's failure, not the device's; the board runs under TCG from its next power-on" "$T/out"
check "<state>/kvm-failed keeps it for a restarted relay or a resumed campaign" \
	grep -q "KVM internal error. Suberror: 1; emulation failure" "$T/r/boards/vm1/kvm-failed"
check "the console log of the next power-on says it" \
	grep -q "powercut relay qemu: KVM failed the last power-on's guest (QEMU said \"KVM internal error. Suberror: 1; emulation failure\"; see qemu.log): this power-on and the later ones run under TCG" "$T/r/console/vm1/cycle-1.log"
check "...and that power-on's kernel ran TCG (pc.accel=tcg)" grep -q "pc.accel=tcg" "$T/r/console/vm1/cycle-1.log"
# a board whose guest KVM failed once stays on TCG when opened again (a
# new relay worker, a resumed campaign): <state>/kvm-failed
cp "$T/r/boards/vm1/kvm-failed" "$T/results/it-vm-kvm/boards/vm1/kvm-failed"
( cd "$T" && "$PCA" relay c.json vm1 on && "$PCA" relay c.json vm1 off ) > "$T/hand2.out" 2>&1
check "opened again with <state>/kvm-failed, the board runs TCG though the probe boots under KVM" \
	sh -c 'grep "^--- board vm1 opened" "$1" | tail -1 | grep -q "accel tcg (relay.accel \"auto\": KVM failed this board.s guest at an earlier power-on, QEMU said \"KVM internal error. Suberror: 1; emulation failure\"" &&
		[ "$(grep "^--- power on" "$1" | tail -1 | grep -c -- "-accel tcg -cpu max ")" -eq 1 ]' _ "$HL"
first_retry=$(jq -s -r '[.[] | select(.ev == "power_on")][1].attempt' "$E")
check "cycle 1's second attempt (a retry, not a new cycle) was the one under TCG" [ "$first_retry" = 2 ]

# 4. KVM runs the board, then fails a later power-on, and the board has no
# retry (boot_retries 0): the harness asks the relay before it blames the
# device, and the power-on is the host's (an INFRA_ERROR), judged at once
echo second > "$T/kvm-mode"
rm -f "$T/kvm-attempts"
cp "$VM/sd.img" "$T/sd0.img"
jq --arg d "$T/sd0.img" '.boards[0].boot_retries = 0 | .boards[0].boot_timeout_ms = 30000 |
	.boards[0].relay.drive = $d' "$T/c.json" > "$T/c0.json"
start=$(date +%s)
"$PC" run "$T/c0.json" --results "$T/r0" --quiet --no-report > "$T/out0" 2>&1
rc0=$?
wall0=$(($(date +%s) - start))
V0="$T/r0/verdicts.jsonl"
E0="$T/r0/events.jsonl"
echo "  boot_retries 0: exit $rc0 in $wall0 s; verdicts $(jq -s -r 'sort_by(.cycle)[] | "\(.cycle) \(.verdict)"' "$V0" | tr '\n' ';')"
check "the probe, then two power-ons ran KVM" \
	[ "$(cut -d' ' -f1 "$T/kvm-attempts" | tr '\n' ' ')" = "probe=1 probe=0 probe=0 " ]
check "no BOOT_FAIL though the board had booted before and had no retry" \
	[ "$(jq -s '[.[] | select(.ev == "boot_fail" or .ev == "final_boot_fail" or .ev == "give_up")] | length' "$E0")" -eq 0 ]
check "cycle 2, the power-on KVM failed, is an INFRA_ERROR whose cause is host_fault, quoting QEMU" \
	[ "$(jq -s '[.[] | select(.ev == "infra" and .cycle == 2 and .cause == "host_fault" and
		(.reason | test("the relay says the host failed the power-on: KVM failed the guest of this power-on \\(QEMU said \"KVM internal error. Suberror: 1; emulation failure\"")))] | length' "$E0")" -eq 1 ]
check "...judged at once, without the grace for a slow boot" sh -c '! grep -q "the power stays on" "$1"' _ "$T/out0"
# cycle 3 (under TCG) may meet the open stall of part 2 (docs/vm.md): an
# INFRA_ERROR, never a device verdict; cycle 1 ran KVM and must PASS
check "cycle 1 PASS, cycle 2 INFRA_ERROR, cycle 3 (under TCG) PASS or INFRA_ERROR" \
	grep -Eq '^1 PASS 2 INFRA_ERROR 3 (PASS|INFRA_ERROR) $' <<< "$(jq -s -r 'sort_by(.cycle)[] | "\(.cycle) \(.verdict)"' "$V0" | tr '\n' ' ')"
check "...and the power-ons after it ran TCG" \
	[ "$(grep '^--- power on' "$T/r0/boards/vm1/qemu.log" | sed 's/.* -accel \([a-z]*\) .*/\1/' | tr '\n' ' ' | cut -d' ' -f1-3)" = "kvm kvm tcg" ]

if [ "$fails" -gt 0 ]; then
	keep=${PC_TEST_TMP:-build/test-tmp}/t-vm-kvm-failed
	rm -rf "$keep" && mkdir -p "$keep" && cp -a "$T/r" "$T/r0" "$T/c.json" "$T/out" "$T/out0" "$T/kvm-attempts" "$keep/" 2>/dev/null
	echo "  the results are kept in $keep"
fi
echo "  campaign: $CYCLES cycles in $wall s, one boot timeout ($BOOT_MS ms) of them on the power-on KVM failed"
echo "t-vm-kvm: $passes passed, $fails failed"
finish
