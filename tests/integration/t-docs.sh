#!/bin/bash
# The documented commands work as written. Every shell block of README.md,
# docs/bring-up.md, docs/target.md, docs/lab.md and the man pages' examples
# carries a mark saying whether it can run here, and this test runs those
# that can, in order, one shell per document, in a scratch folder, with the
# build under test first on PATH (and configs/ linked in); it fails naming
# file:line of the first command that fails. Marks (docs/testing.md, "Documented commands"):
#
#   markdown, the line before a ```sh block      man page, the line before .EX
#   <!-- runs-here -->                          .\" runs-here
#   <!-- runs-here: root -->    (loop devices: skipped as a part without root)
#   <!-- runs-here: source tree -->  (run in the source tree, not the scratch folder)
#   <!-- hardware: WHY -->                      .\" hardware: WHY
#   <!-- not-run: WHY -->                       .\" not-run: WHY
#   <!-- file: NAME -->  before a ```json block: written to NAME in the scratch folder
#
# A command that must exit non-zero says so: a trailing "# exits N". The
# commands of hardware and not-run blocks are printed and counted, not run;
# those that call powercut or powercut-agent are held against the binary's
# subcommand's --help (every --option must be one it names), and every `powercut-agent
# run` anywhere, the configs' notes included, must pass --key.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BABS=$(cd "$BIN" && pwd)
case "$BIN" in
*san) OPTS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" ;;
*) OPTS="-O2 -g" ;;
esac
DOCS=${PC_DOCS:-README.md docs/bring-up.md docs/target.md docs/lab.md docs/man/powercut.1 docs/man/powercut-agent.1}

# extract FILE: the file's marked blocks as records, one a line:
#   B<TAB>line<TAB>kind<TAB>arg     a block starts (kind: run, hardware, not-run, file, unmarked)
#   C<TAB>line<TAB>command          a command (continuation lines joined with \n)
#   D<TAB>line<TAB>text             a line of a file block
extract() {
	case "$1" in
	*.md) awk '
		function flush() { if (cmd != "") { gsub(/\n/, "\\n", cmd); print "C\t" cline "\t" cmd; cmd = "" } }
		/^[ \t]*<!-- *(runs-here|hardware|not-run|file)[ :>-]/ {
			m = $0; sub(/^[ \t]*<!-- */, "", m); sub(/ *-->.*$/, "", m)
			kind = m; sub(/:.*/, "", kind); arg = m; if (index(m, ":")) { sub(/^[^:]*: */, "", arg) } else arg = ""
			if (kind == "runs-here") kind = "run"
			mark = kind; marg = arg; mline = NR; next }
		/^[ \t]*```/ {
			if (inb) { flush(); inb = 0; mark = ""; next }
			info = $0; sub(/^[ \t]*```/, "", info)
			if (mark == "file" && mline == NR - 1) { print "B\t" NR "\tfile\t" marg; inb = 2; next }
			if (info ~ /^(sh|shell|bash|console)$/) {
				print "B\t" NR "\t" (mark == "" || mline != NR - 1 ? "unmarked" : mark) "\t" marg; inb = 1
			} else inb = 3
			mark = ""; next }
		inb == 2 { print "D\t" NR "\t" $0; next }
		inb == 1 {
			sub(/^    /, "")
			if (cmd == "") { if ($0 ~ /^[ \t]*(#|$)/) next; cline = NR; cmd = $0 } else cmd = cmd "\n" $0
			if (cmd !~ /\\$/) flush()
			next }' "$1" ;;
	*.1) awk '
		function unroff(s) {
			gsub(/\\-/, "-", s); gsub(/\\\(dq/, "\"", s); gsub(/\\\(aq/, "\047", s); gsub(/\\&/, "", s)
			gsub(/\\e/, "\\", s); return s }
		function flush() { if (cmd != "") { gsub(/\n/, "\\n", cmd); print "C\t" cline "\t" cmd; cmd = "" } }
		/^\.\\" *(runs-here|hardware|not-run)/ {
			m = $0; sub(/^\.\\" */, "", m)
			kind = m; sub(/:.*/, "", kind); arg = m; if (index(m, ":")) { sub(/^[^:]*: */, "", arg) } else arg = ""
			if (kind == "runs-here") kind = "run"
			mark = kind; marg = arg; next }
		/^\.EX/ { inb = 1; bl = NR; bk = (mark == "" ? "unmarked" : mark); ba = marg; mark = ""; started = 0; next }
		/^\.EE/ { flush(); inb = 0; next }
		inb {
			l = unroff($0)
			if (cmd != "") { cmd = cmd "\n" l; if (l !~ /\\$/) flush(); next }
			if (l ~ /^[$#] /) {
				if (!started) { print "B\t" bl "\t" bk "\t" ba; started = 1 }
				cline = NR; cmd = substr(l, 3); if (cmd !~ /\\$/) flush()
			}
			next }
		/^\.(PP|SH|SS|TP)/ { mark = "" }' "$1" ;;
	esac
}

# optcheck FILE:LINE COMMAND: a powercut or powercut-agent command's --options
# are ones the binary's --help names, and an agent's run passes --key
optcheck() {
	local where=$1 cmd=$2 prog w sub help
	set -f
	set -- $cmd
	set +f
	prog=${1##*/}
	case "$prog" in powercut | powercut-agent) ;; *) return 0 ;; esac
	# the subcommand's own --help names its options
	sub=${2:-} help="$T/help.$prog"
	if [ -n "$sub" ] && [ -s "$T/help.$prog.$sub" ]; then help="$T/help.$prog.$sub"; else sub=""; fi
	for w in "$@"; do
		case "$w" in
		--*=*) w=${w%%=*} ;;
		--*) ;;
		*) continue ;;
		esac
		grep -q -- "$w\b" "$help" || { bad "$where: $prog ${sub:+$sub }has no option $w: $cmd"; return 1; }
	done
	if [ "$prog" = powercut-agent ] && [ "${2:-}" = run ]; then
		case " $* " in *" --key "*) ;; *) bad "$where: powercut-agent run without --key (the agent cannot prove itself): $cmd"; return 1 ;; esac
	fi
	return 0
}
"$BIN/powercut" --help > "$T/help.powercut" 2>&1
for s in run replay report status check-config relay key plan lava crash-states; do
	"$BIN/powercut" "$s" --help > "$T/help.powercut.$s" 2>&1
done
"$BIN/powercut-agent" --help > "$T/help.powercut-agent" 2>&1
for s in prepare run scan info write; do "$BIN/powercut-agent" "$s" --help > "$T/help.powercut-agent.$s" 2>&1; done

W="$T/work"
mkdir -p "$W"
# the examples name configs/ as in the source tree (installed: share/powercut/configs)
ln -s "$ROOT/configs" "$W/configs"
# the rehearsal's loop device goes with the test, whatever happens to it
detach_loops() {
	local d
	for d in $(losetup -n -O NAME -j "$W/emmc.img" 2>/dev/null); do partx -d "$d" 2>/dev/null; losetup -d "$d"; done
}
trap 'pc_rc=$?; detach_loops; rm_T' EXIT
ran=0 hw=0 notrun=0 files=0
for doc in $DOCS; do
	extract "$ROOT/$doc" > "$T/blocks"
	script="$T/run.$(basename "$doc").sh"
	{
		echo 'cd "$W" || exit 99'
		# the rehearsal claims PARTLABEL=powercut: another device with that
		# label here (a leftover loop device, this machine's own disk) would
		# make it ambiguous, and the agent would rightly refuse
		! grep -q 'runs-here: root' "$ROOT/$doc" ||
			echo 'o=$(blkid -t PARTLABEL=powercut -o device 2>/dev/null) && [ -n "$o" ] && { echo "$o"; exit 77; }'
		echo 'pc_fail() { echo "  FAILED: $1 (exit $2, wanted $3): $4"; sed "s/^/    | /" "$5" | tail -15; exit 1; }'
	} > "$script"
	kind="" arg="" skipdoc=""
	n=0
	while IFS=$'\t' read -r rec line a b; do
		where="$doc:$line"
		case "$rec" in
		B)
			kind=$a arg=$b
			case "$kind" in
			unmarked) bad "$where: a shell block without a mark (runs-here, hardware: WHY, not-run: WHY)" ;;
			file)
				files=$((files + 1))
				printf 'cat > %q <<'"'"'PC_DOC_EOF'"'"'\n' "$arg" >> "$script" ;;
			run)
				if [ "$arg" = root ] && { [ "$(id -u)" != 0 ] || ! command -v losetup > /dev/null; }; then
					skipdoc="$where needs root and loop devices"
				fi ;;
			esac ;;
		D) printf '%s\n' "$a" >> "$script" ;;
		E) echo PC_DOC_EOF >> "$script" ;;
		C)
			cmd=$(printf '%s' "$a" | sed 's/\\n/\n/g')
			case "$kind" in
			run)
				n=$((n + 1)); ran=$((ran + 1))
				want=0
				if [[ $cmd =~ \#\ *exits\ +([0-9]+)[^$'\n']*$ ]]; then want=${BASH_REMATCH[1]}; fi
				optcheck "$where" "$cmd"
				if [ "$arg" = "source tree" ]; then
					printf '( cd %q && {\n%s\n} ) > "$T/out.%d" 2>&1 < /dev/null\n' "$ROOT" "$cmd" "$n" >> "$script"
				else
					printf '{\n%s\n} > "$T/out.%d" 2>&1 < /dev/null\n' "$cmd" "$n" >> "$script"
				fi
				printf 'rc=$?; [ $rc -eq %d ] || pc_fail %q $rc %d %q "$T/out.%d"\n' "$want" "$where" "$want" "$cmd" "$n" >> "$script" ;;
			hardware | not-run)
				[ "$kind" = hardware ] && hw=$((hw + 1)) || notrun=$((notrun + 1))
				echo "  $kind ($arg): $where: $(printf '%s' "$cmd" | head -1)"
				optcheck "$where" "$cmd" ;;
			esac ;;
		esac
	done < <(extract "$ROOT/$doc" | awk -F'\t' '
		$1 == "D" { print; infile = 1; next }
		{ if (infile) { print "E" } infile = 0; print }
		END { if (infile) print "E" }' | sed 's/^E$/E\t0\t\t/')
	if [ -n "$skipdoc" ]; then
		skip_part "$doc: its runnable blocks were not run: $skipdoc"
		continue
	fi
	[ "$n" -gt 0 ] || continue
	# one run at a time on this machine: the rehearsal's PARTLABEL=powercut
	# must be the only one
	W="$W" T="$T/o.$(basename "$doc")" PATH="$BABS:$PATH" B="$BABS" OPT="$OPTS" \
		flock -w 900 "${TMPDIR:-/tmp}/powercut-t-docs.lock" bash -c 'mkdir -p "$T"; . "$1"' sh "$script" > "$T/doc.out" 2>&1
	rc=$?
	if [ $rc -eq 77 ]; then
		skip_part "$doc: a device here already carries PARTLABEL=powercut ($(tr '\n' ' ' < "$T/doc.out")): its runnable blocks were not run"
		continue
	fi
	if ! check "$doc: its $n runnable commands ran as written (exit $rc)" [ $rc -eq 0 ]; then
		cat "$T/doc.out"
	fi
	# bring-up.md's rehearsal as written: where its cuts landed (issue 37:
	# most should meet the writes), the figure said, from its report
	if [ "$(basename "$doc")" = bring-up.md ]; then
		# (the first table only: run and report both print it)
		awk 'done { next } /where the cuts landed:/ { t = 1; next }
			t && NF == 7 && $1 ~ /^(fua|flush)$/ { w += $3 + $4 + $5 + $6; a += $2 + $3 + $4 + $5 + $6 + $7; next }
			t { t = 0; done = 1 }
			END { if (a) printf "  (the rehearsal as written: %d of %d cuts landed during the writes)\n", w, a }' \
			"$T/o.bring-up.md"/out.*
	fi
done

# the configs: the commands their notes document
for f in "$ROOT"/configs/*.json; do
	jq -r '.. | strings | select(test("powercut-agent run"))' "$f" | sed 's/.*\(powercut-agent run\)/\1/' |
		while IFS= read -r c; do
			echo "  hardware (a board's agent): configs/${f##*/}: $c"
			if ! optcheck "configs/${f##*/}" "$c"; then echo bad >> "$T/cfgbad"; fi
		done
done
check "the configs' documented agent commands use known options and pass --key" [ ! -e "$T/cfgbad" ]
# and their command relays' commands: the lab's tools, counted
cfgcmds=0
for f in "$ROOT"/configs/*.json; do
	while IFS= read -r c; do
		echo "  hardware (a relay's command): configs/${f##*/}: $c"
		cfgcmds=$((cfgcmds + 1))
	done < <(jq -r '[.defaults.relay?, .boards[]?.relay?] | .[] | select(.driver? == "command") | .on, .off, .get | strings' "$f")
done
hw=$((hw + cfgcmds))
# README's demo (issue 37): its report is configs/sim-quick.json's, modes and
# cycles, and its Commands block gives run, replay, report and status as
# their --help does
demo=$(sed -n '/^## What the demo shows/,/^## Reading a verdict/p' "$ROOT/README.md")
want_modes=$(jq -r '(.defaults.modes // .boards[0].modes)[]' "$ROOT/configs/sim-quick.json" | tr '\n' ' ')
got_modes=$(awk '/^  mode +cycles/ { t = 1; next } t && /^  total/ { exit } t { printf "%s ", $1 }' <<< "$demo")
check "README's demo report runs the modes of configs/sim-quick.json ('$got_modes', wanted '$want_modes')" \
	[ "$got_modes" = "$want_modes" ]
want_cycles=$(jq -r '.cycles' "$ROOT/configs/sim-quick.json")
got_cycles=$(awk '/^  total/ { print $2; exit }' <<< "$demo")
check "...and its cycles per board ($got_cycles, wanted $want_cycles)" [ "$got_cycles" = "$want_cycles" ]
for s in replay report status; do
	syn=$(head -1 "$T/help.powercut.$s" | sed 's/^usage: //')
	check "README's Commands give powercut $s as its --help does: $syn" grep -qF -- "$syn" "$ROOT/README.md"
done
syn=$(sed -n '1{s/^usage: //;p}; 2{s/^ *//;p}' "$T/help.powercut.run" | tr '\n' ' ' | sed 's/ $//')
check "README's Commands give powercut run as its --help does: $syn" grep -qF -- "$syn" "$ROOT/README.md"
echo "  documented commands: $ran run here, $hw need hardware, $notrun not run (reasons above); $files files written from the docs"
case " $DOCS " in
*" docs/bring-up.md "*) check "the documents have commands that run here" [ "$ran" -gt 0 ] ;;
esac
finish
