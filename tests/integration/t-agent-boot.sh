#!/bin/bash
# The board's start-up files as shipped (docs/target.md): `make install-agent`
# into a scratch root file system; its /etc/default/powercut-agent read by
# systemd's own parser and by the shell, which must agree; the unit checked by
# `systemd-analyze verify`; the unit's ExecStart expanded with that file by
# systemd's documented rules; and the agent started from exactly that command
# line, and from the installed init script, against sim campaigns over TCP and
# over a serial console (a pty pair stands for the cable).
#
# systemd's parser: no systemd runs here, and systemd 252 has no offline tool
# that reads a unit's EnvironmentFile=. Its user environment generator
# (30-systemd-environment-d-generator) reads environment.d files with the
# same function EnvironmentFile= uses (parse_env_file_internal(): quotes,
# comments, whitespace); it also expands $VAR, which the shipped file must not
# contain (checked). ExecStart's ${VAR} and $VAR are expanded here by the
# rules of systemd.service(5), "Command lines".
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

R="$T/root"
mk install-agent B="$BABS" OPT="$OPTS" DESTDIR="$R" PREFIX=/usr > "$T/install.log" 2>&1
rc=$?
check "make install-agent DESTDIR PREFIX=/usr (exit $rc)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || { tail -5 "$T/install.log"; finish; }
ENVF="$R/etc/default/powercut-agent"
UNIT="$R/usr/lib/systemd/system/powercut-agent.service"
INIT="$R/etc/init.d/powercut-agent"
check "the environment file is installed as /etc/default/powercut-agent, mode 0644" \
	[ "$(stat -c %a "$ENVF" 2>/dev/null)" = 644 ]
check "  ... and is the shipped agent/powercut-agent.env" cmp -s "$ENVF" "$ROOT/agent/powercut-agent.env"
check "the unit and the init script are installed (0644, 0755)" \
	[ "$(stat -c %a "$UNIT" "$INIT" 2>/dev/null | tr '\n' ' ')" = "644 755 " ]
check "/etc/powercut (the key's folder) is mode 0700" [ "$(stat -c %a "$R/etc/powercut")" = 700 ]
check "no host file in a board's install (usr/bin/powercut)" test ! -e "$R/usr/bin/powercut"
check "no host file in a board's install (usr/share/powercut)" test ! -e "$R/usr/share/powercut"
echo "# changed by the test" >> "$ENVF"
mk install-agent B="$BABS" OPT="$OPTS" DESTDIR="$R" PREFIX=/usr > "$T/install2.log" 2>&1
check "a second install keeps the board's own environment file" grep -q "changed by the test" "$ENVF"
cp "$ROOT/agent/powercut-agent.env" "$ENVF"

# --- the environment file: what systemd and the shell read --------------------
GEN=""
for g in /usr/lib/systemd/user-environment-generators/30-systemd-environment-d-generator \
	/lib/systemd/user-environment-generators/30-systemd-environment-d-generator; do
	[ -x "$g" ] && { GEN=$g; break; }
done
VARS="DEVICE LINK BOARD KEY AGENT_OPTS"
# sd_env FILE: the variables as systemd's parser reads FILE, VAR=value a line
sd_env() {
	local x="$T/xdg.$RANDOM" l v n
	mkdir -p "$x/environment.d"
	cp "$1" "$x/environment.d/zz-powercut-agent.conf"
	env -i HOME="$x" XDG_CONFIG_HOME="$x" "$GEN" > "$x/out" 2> "$x/err" || { cat "$x/err" >&2; return 1; }
	for n in $VARS; do
		l=$(grep "^$n=" "$x/out" | tail -1)
		[ -n "$l" ] || { echo "$n unset"; continue; }
		v=${l#*=}
		# the generator quotes a value with spaces: "..." with \" \\ \$ \` escaped
		case "$v" in \"*\") v=${v#\"}; v=${v%\"}; v=$(printf '%s' "$v" | sed 's/\\\(.\)/\1/g') ;; esac
		printf '%s=%s\n' "$n" "$v"
	done
}
# sh_env FILE: the same as the init script's "." reads it
sh_env() {
	env -i sh -c '. "$1" && for n in $2; do eval "printf \"%s=%s\\n\" \$n \"\${$n-}\""; done' sh "$1" "$VARS"
}
bad_lines=$(grep -vnE '^(#.*)?$|^[A-Z_]+=("[^"$\\`]*"|[^ "$\\`#]*)$' "$ENVF")
check "every line of the environment file is a comment or VAR=value both parsers read alike${bad_lines:+ (not: $bad_lines)}" \
	[ -z "$bad_lines" ]
if [ -n "$GEN" ]; then
	sd_env "$ENVF" > "$T/env.sd"
	sh_env "$ENVF" > "$T/env.sh"
	check "systemd's parser reads DEVICE, LINK, BOARD, KEY, AGENT_OPTS from it" \
		[ "$(grep -c -v ' unset$' "$T/env.sd")" -eq 5 ]
	check "systemd and the shell read the same five values ($(tr '\n' ';' < "$T/env.sd"))" cmp -s "$T/env.sd" "$T/env.sh"
	# the form docs/target.md used to show: a comment after a value
	printf 'DEVICE=PARTLABEL=powercut          # a file, /dev/mmcblk0p5\nLINK="--connect 192.0.2.10:7878"\n' > "$T/old.env"
	check "a '# comment' after a value is caught: systemd keeps it, the shell does not" \
		sh -c '! cmp -s "$1" "$2"' sh <(sd_env "$T/old.env") <(sh_env "$T/old.env")
	check "  ... (systemd's value holds the comment)" grep -q '^DEVICE=PARTLABEL=powercut .*# a file' <(sd_env "$T/old.env")
else
	skip_part "systemd's environment generator is not installed (package systemd): the file was read by the shell only"
	sh_env "$ENVF" > "$T/env.sd"
fi

# --- the unit: verify, and its command line --------------------------------------
sed "s|/usr/bin/powercut-agent|$R/usr/bin/powercut-agent|" "$UNIT" > "$T/powercut-agent.service"
if command -v systemd-analyze > /dev/null 2>&1; then
	systemd-analyze verify --man=no "$T/powercut-agent.service" > "$T/verify.out" 2>&1
	rc=$?
	check "systemd-analyze verify powercut-agent.service: exit 0, no warning (exit $rc: $(head -c 300 "$T/verify.out"))" \
		test $rc -eq 0 -a ! -s "$T/verify.out"
else
	skip_part "systemd-analyze is not installed: the unit was not verified"
fi
execline=$(sed -n 's/^ExecStart=//p' "$T/powercut-agent.service")
quoting=$(printf '%s' "$execline" | tr -d -c "\"'\\\\")
check "the unit's ExecStart has no quotes or escapes (its words are split at spaces)" [ -z "$quoting" ]
check "the unit reads /etc/default/powercut-agent" grep -qx 'EnvironmentFile=/etc/default/powercut-agent' "$UNIT"
# expand_exec ENVLINES: ExecStart's words with the variables of ENVLINES
# (VAR=value a line) as systemd.service(5) says: "${VAR}" is replaced by the
# value as it is, one argument; "$VAR" as a word of its own by the value
# split at whitespace, zero or more arguments. One argument a line out.
expand_exec() {
	local -A E=()
	local l w n v
	while IFS= read -r l; do E[${l%%=*}]=${l#*=}; done < "$1"
	set -f
	for w in $execline; do
		if [[ $w =~ ^\$([A-Za-z_][A-Za-z0-9_]*)$ ]]; then
			for v in ${E[${BASH_REMATCH[1]}]-}; do printf '%s\n' "$v"; done
		else
			while [[ $w =~ \$\{([A-Za-z_][A-Za-z0-9_]*)\} ]]; do
				n=${BASH_REMATCH[1]}
				w=${w/"\${$n}"/${E[$n]-}}
			done
			printf '%s\n' "$w"
		fi
	done
	set +f
}
expand_exec "$T/env.sd" > "$T/argv.shipped"
check "the shipped file gives the documented command line ($(tr '\n' ' ' < "$T/argv.shipped"))" \
	[ "$(tr '\n' ' ' < "$T/argv.shipped")" = "$R/usr/bin/powercut-agent run --device PARTLABEL=powercut --connect 192.0.2.10:7878 --board imx8-slot3 --key /etc/powercut/agent.key --connect-timeout-ms 60000 " ]

# --- the agent started from them, against sim campaigns -------------------------
"$PC" key new "$T/agent.key" > "$T/key.out" 2>&1
check "powercut key new makes the campaign's key, mode 0600" [ "$(stat -c %a "$T/agent.key" 2>/dev/null)" = 600 ]
check "  ... and prints its fingerprint, the key file's sha256sum" \
	grep -q "fingerprint sha256 $(sha256sum < "$T/agent.key" | cut -d' ' -f1)" "$T/key.out"
check "  ... never the key itself" sh -c '! grep -qf "$1" "$2"' sh "$T/agent.key" "$T/key.out"
expect_fail "  ... and refuses to overwrite it without --force" "new --force" "$PC" key new "$T/agent.key"
"$PC" key new "$T/other.key" > /dev/null 2>&1
old_fp=$(sha256sum < "$T/other.key")
"$PC" key new --force "$T/other.key" > "$T/force.out" 2>&1
check "  ... --force replaces it: a new key, mode 0600, no file left beside" \
	sh -c '[ "$(sha256sum < "$1")" != "$2" ] && [ "$(stat -c %a "$1")" = 600 ] && [ -z "$(ls "$3" | grep "other.key.new")" ]' \
	sh "$T/other.key" "$old_fp" "$T"
check "powercut key show prints the board copy's sha256sum" \
	grep -q "fingerprint sha256 $(sha256sum < "$T/other.key" | cut -d' ' -f1)" <("$PC" key show "$T/other.key")
chmod 644 "$T/other.key"
expect_fail "  ... and refuses a key others may read, as the agent does" "chmod 600" "$PC" key show "$T/other.key"
check "the board's emulated eMMC is prepared" "$AGENT" prepare --device "sim:$T/m.img" --size 1M --yes
write_get "$T/get.sh"

# board_env LINK...: the shipped file with this board's values, comments kept
board_env() {
	sed -e "s|^DEVICE=.*|DEVICE=sim:$T/m.img|" -e "s|^LINK=.*|LINK=\"$*\"|" -e "s|^BOARD=.*|BOARD=b1|" \
		-e "s|^KEY=.*|KEY=$T/agent.key|" -e "s|^AGENT_OPTS=.*|AGENT_OPTS=\"--fresh-boot-id --connect-timeout-ms 20000\"|" \
		"$ENVF" > "$T/board.env"
}
# campaign NAME START LINK_JSON LISTEN: 4 cycles of board b1 whose power-on runs START
# N PASS of 4 and the exit: 0, or 3 with the device INCONCLUSIVE (lib.sh)
four_passed() { [ "$1" -eq 4 ] && passed_or_late "$2" "$3"; }
campaign() {
	cat > "$T/$1.json" <<JSON
{ "campaign": "$1", "cycles": 4, "seed": 5, "listen": "$4", "key_file": "$T/agent.key",
  "boards": [ { "name": "b1", "device": { "backend": "posix", "record_size": 4096 },
    "link": $3,
    "relay": { "driver": "command", "on": "$2", "off": "kill -KILL -\$(cat $T/pgid) 2>/dev/null; true",
      "get": "sh $T/get.sh $T/agent.pid" },
    "modes": ["fua", "flush"], "records_per_cycle": 40,
    "cut": { "at": "mix", "window_ms": [2, 20] }, "boot_timeout_ms": 15000, "off_ms": 5 } ] }
JSON
	"$PC" run "$T/$1.json" --results "$T/r-$1" --quiet --no-report > "$T/$1.out" 2>&1
}
# run_mode NAME LINK_JSON LISTEN LINK...
run_mode() {
	local name=$1 link=$2 listen=$3 rc n
	shift 3
	board_env "$@"
	# the unit: the command line systemd would run, from the board's file
	if [ -n "$GEN" ]; then sd_env "$T/board.env" > "$T/board.sd"; else sh_env "$T/board.env" > "$T/board.sd"; fi
	expand_exec "$T/board.sd" > "$T/argv.$name"
	{ echo 'echo $$ > "$1/pgid"; echo $$ > "$1/agent.pid"'; printf 'exec'; while IFS= read -r a; do printf ' %q' "$a"; done < "$T/argv.$name"; echo; } > "$T/unit-$name.sh"
	campaign "unit-$name" "setsid sh $T/unit-$name.sh $T > $T/console-unit-$name.log 2>&1 &" "$link" "$listen"
	rc=$?
	n=$(jq -s '[.[] | select(.verdict == "PASS")] | length' "$T/r-unit-$name/verdicts.jsonl" 2>/dev/null)
	check "$name: the agent from the unit's ExecStart ($(tr '\n' ' ' < "$T/argv.$name" | sed "s|$T|T|g")): 4 cycles PASS (exit $rc, $n PASS)" \
		four_passed "${n:-0}" "$rc" "$T/r-unit-$name"
	[ $rc -eq 0 ] || tail -5 "$T/unit-$name.out"
	# the init script: the same file through "."
	printf 'echo $$ > %s/pgid\nexec env AGENT=%s CONF=%s PIDFILE=%s CONSOLE=%s sh %s start\n' "$T" \
		"$R/usr/bin/powercut-agent" "$T/board.env" "$T/agent.pid" "$T/console-init-$name.log" "$INIT" > "$T/init-$name.sh"
	campaign "init-$name" "setsid -w sh $T/init-$name.sh > $T/init-$name.start 2>&1" "$link" "$listen"
	rc=$?
	n=$(jq -s '[.[] | select(.verdict == "PASS")] | length' "$T/r-init-$name/verdicts.jsonl" 2>/dev/null)
	check "$name: the agent from the installed init script: 4 cycles PASS (exit $rc, $n PASS)" \
		four_passed "${n:-0}" "$rc" "$T/r-init-$name"
	[ $rc -eq 0 ] || { tail -5 "$T/init-$name.out"; cat "$T/init-$name.start"; }
	check "$name: every power-on started the agent at once (no HELLO timeout, unit or init script)" \
		sh -c '! grep -q "no HELLO" "$1" "$2"' sh "$T/unit-$name.out" "$T/init-$name.out"
}
port=$(free_port)
run_mode tcp '{ "type": "tcp" }' "127.0.0.1:$port" --connect "127.0.0.1:$port"
check "tcp: the init script said it started the agent" grep -q "Starting powercut-agent: OK" "$T/init-tcp.start"
if [ -x "$TOOLS/ptypair" ]; then
cable_start
run_mode serial "{ \"type\": \"serial\", \"device\": \"$host_end\", \"baud\": 115200 }" "127.0.0.1:0" --console "$board_end" --baud 115200
check "serial: the console log holds the agent's marked lines" grep -q '@@PC {"type":"hello"' "$T/r-unit-serial/console/b1/cycle-2.log"
check "serial: the unit's command line had --console, not --connect" \
	sh -c 'grep -qx -- --console "$1" && ! grep -qx -- --connect "$1"' sh "$T/argv.serial"
else
	skip_part "$TOOLS/ptypair is not built (make san builds it): the serial-console mode did not run"
fi

# a pid file left from an earlier boot names a pid that another process has
# now (here: this shell): the agent is started all the same
printf '#!/bin/sh\nexit 0\n' > "$T/fake-agent"; chmod +x "$T/fake-agent"
echo $$ > "$T/stale.pid"
env AGENT="$T/fake-agent" CONF="$T/board.env" PIDFILE="$T/stale.pid" CONSOLE=/dev/null sh "$INIT" start > "$T/stale.out" 2>&1
check "the init script starts the agent when its pid file names another process" grep -q "^Starting powercut-agent: OK" "$T/stale.out"

# the init script refuses what it cannot run, saying why
printf 'DEVICE=x\nHOST=192.0.2.10:7878\nBOARD=b\nKEY=k\n' > "$T/old-host.env"
expect_fail "the init script names LINK for a file that still sets HOST" 'LINK="--connect 192.0.2.10:7878"' \
	env CONF="$T/old-host.env" PIDFILE="$T/x.pid" sh "$INIT" start
expect_fail "  ... and a missing environment file" "is missing" env CONF="$T/nothere" PIDFILE="$T/x.pid" sh "$INIT" start
finish
