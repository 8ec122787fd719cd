#!/bin/bash
# t-lava-server: the distributed case. A LAVA lab on this machine, each piece
# Debian's own: PostgreSQL (a cluster of this test's), lava-server's Django
# application under gunicorn, lava-scheduler, lava-publisher and two
# lava-worker processes under two worker names, as two hosts would run them,
# each with its own dispatcher configuration (its own folder bind-mounted at
# /lab). Two sim boards behind Debian's pdudaemon, one per worker, the device
# type the shipped template (configs/lava/powercut-board.jinja2). One job per
# board, submitted with lavacli. Checked:
#   - each job ran on its board's worker and is Complete;
#   - the results read back through the server's API (lavacli results, the
#     REST API's JUnit export, which parses) hold the powercut cases: the
#     honest board's pass, the lying-flush board's flush case fails;
#   - `powercut report` over both workers' folders is one per-device report.
# Every daemon is stopped by its pid at the end. Needs lava-server, lavacli,
# postgresql, gunicorn and what t-lava needs (make lava-check installs them;
# PC_LAVA_REQUIRE=1 makes a skip a failure).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
echo "t-lava-server: two LAVA workers, lava-server with PostgreSQL, jobs submitted with lavacli"
lava_setup
# Debian's python3 (a python3 earlier in PATH may be a shim)
PY=$(command -v /usr/bin/python3 || command -v python3)
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2> /dev/null | sort -V | tail -1)
for c in lava-server lava-worker lavacli gunicorn3 docker pdudaemon curl jq runuser; do
	command -v $c > /dev/null || lava_skip "$c is not installed"
done
[ -x "$PGBIN/initdb" ] || lava_skip "PostgreSQL's initdb is not installed (postgresql)"
id postgres > /dev/null 2>&1 || lava_skip "there is no postgres user (postgresql)"
[ "$(id -u)" = 0 ] || lava_skip "the LAVA lab runs as root here (its workers run docker)"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$ROOT/build/powercut" ] || lava_skip "build/powercut is not built (make all): the test shell runs the plain build"

# lava-server 2023.01 reads a worker's dispatcher configuration from
# /etc/lava-server/dispatcher.d/WORKER.yaml only (lava_server/files.py): the
# workers' names are this test's own, their files removed at the end.
W1=pc-t$$-w1 W2=pc-t$$-w2
DD=/etc/lava-server/dispatcher.d
pids="" pg=""
cleanup() {
	local f g groups=""
	for f in "$T"/*.pid; do
		[ -s "$f" ] && groups="$groups $(cat "$f" 2> /dev/null)"
	done
	for g in $groups; do kill -TERM -- "-$g" 2> /dev/null; done
	for _ in $(seq 50); do
		f=""
		for g in $groups; do kill -0 -- "-$g" 2> /dev/null && f=1; done
		[ -n "$f" ] || break
		sleep 0.1
	done
	for g in $groups; do kill -KILL -- "-$g" 2> /dev/null; done
	docker ps -aq --filter name=lava-docker-test-shell 2> /dev/null | xargs -r docker rm -f > /dev/null 2>&1
	# shellcheck disable=SC2086
	stop_daemons $pids
	[ -n "$pg" ] && runuser -u postgres -- "$PGBIN/pg_ctl" -D "$T/pg" -m immediate -w stop > /dev/null 2>&1
	rm -f "$DD/$W1.yaml" "$DD/$W2.yaml"
	rm_T
}
trap 'pc_rc=$?; cleanup' EXIT
check "dockerd runs (tools/lava/dockerd)" tools/lava/dockerd start
if ! check "the test shell's image is there (tools/lava/shell-image)" tools/lava/shell-image powercut-shell; then
	finish
fi

# ---- PostgreSQL: a cluster of this test's, run by the postgres user ----
chmod 711 "$T"
mkdir -p "$T/pg" "$T/log"
chown postgres "$T/pg"
chmod 700 "$T/pg"
pgport=$(free_port)
if ! check "initdb makes the test's PostgreSQL cluster" \
	sh -c "runuser -u postgres -- '$PGBIN/initdb' -D '$T/pg' -A trust -U postgres -E UTF8 --locale=C.UTF-8 -N > '$T/log/initdb.log' 2>&1"; then
	finish
fi
pg=1
if ! check "PostgreSQL starts on port $pgport" runuser -u postgres -- nice "$PGBIN/pg_ctl" -D "$T/pg" -l "$T/pg/log" -w -s \
	-o "-p $pgport -k $T/pg -c listen_addresses=127.0.0.1 -c fsync=off" start; then
	finish
fi
check "...the lava role and database are made" \
	runuser -u postgres -- "$PGBIN/psql" -q -h 127.0.0.1 -p "$pgport" -U postgres \
	-c "CREATE ROLE lava LOGIN PASSWORD 'lava'" -c "CREATE DATABASE lava OWNER lava ENCODING 'UTF8' TEMPLATE template0"

# ---- lava-server: its settings from the environment, its files in $T ----
mkdir -p "$T/devices" "$T/device-types" "$T/health-checks" "$T/media" "$T/lab1/results" "$T/lab2/results"
cp configs/lava/powercut-board.jinja2 "$T/device-types/"
export LAVA_YAML_SETTINGS_DATABASES="{default: {ENGINE: django.db.backends.postgresql, NAME: lava, USER: lava, PASSWORD: lava, HOST: 127.0.0.1, PORT: '$pgport'}}"
export LAVA_SETTINGS_DEVICES_PATH="$T/devices"
export LAVA_YAML_SETTINGS_DEVICE_TYPES_PATHS="['$T/device-types', /usr/share/lava-server/device-types]"
export LAVA_SETTINGS_HEALTH_CHECKS_PATH="$T/health-checks"
export LAVA_SETTINGS_MEDIA_ROOT="$T/media"
export LAVA_SETTINGS_INTERNAL_EVENT_SOCKET="ipc://$T/events.ipc"
events="tcp://127.0.0.1:$(free_port)"
export LAVA_SETTINGS_EVENT_SOCKET="$events"
export LAVA_YAML_SETTINGS_EVENT_NOTIFICATION=true
export ALLOWED_HOSTS=127.0.0.1,localhost
manage() { nice lava-server manage "$@" >> "$T/log/manage.log" 2>&1; }
if ! check "lava-server manage migrate makes the schema" manage migrate --noinput; then
	tail -5 "$T/log/manage.log"
	finish
fi
# job ids from 1000 + this test's pid: a job's docker container is named
# after its id (lava-docker-test-shell-ID-LEVEL), and t-lava's lava-run jobs
# (ids 1, 2 and 100) may run beside this test
check "...job ids start at $((1000 + $$))" runuser -u postgres -- "$PGBIN/psql" -q -h 127.0.0.1 -p "$pgport" -U postgres -d lava -o /dev/null \
	-c "SELECT setval('lava_scheduler_app_testjob_id_seq', $((1000 + $$)))"
check "...an admin user" manage users add --superuser --staff --passwd admin admin
nice lava-server manage tokens add --user admin > "$T/admin.token" 2>> "$T/log/manage.log"
check "...its API token" grep -Eq '^[a-z0-9]{32,}$' "$T/admin.token"
for w in $W1 $W2; do
	nice lava-server manage workers add --description "powercut test worker" "$w" > "$T/$w.out" 2>> "$T/log/manage.log"
	check "...worker $w is added, with its token" grep -q '^Token: ' "$T/$w.out"
done
check "...the device type powercut-board (configs/lava/powercut-board.jinja2)" manage device-types add powercut-board

# ---- the lab: one pdudaemon, a board per worker ----
"$ROOT/build/powercut" key new "$T/agent.key" > /dev/null 2>&1
pdu_lab "$ROOT/build/powercut-agent"
rc=$?
check "pdudaemon (HTTP) starts on port $dport (was $rc)" test $rc -eq 0
board() { # NAME OUTLET PROFILE WORKER LAB: the board, its campaign on the worker's /lab, its device
	local lport
	lport=$(free_port)
	echo "$1 127.0.0.1:$lport $3" > "$T/outlet-$2"
	"$ROOT/build/powercut-agent" prepare --device "sim:$T/$1.img" --size 4M --yes > /dev/null 2>&1
	cat > "$T/$5/$1.json" <<JSON
{ "campaign": "lava-server-$1", "cycles": 8, "seed": 4, "listen": "127.0.0.1:$lport", "key_file": "/lab/agent.key",
  "boards": [ { "name": "$1", "device": { "backend": "sim", "record_size": 4096 },
    "modes": ["fua", "flush"], "records_per_cycle": 200, "flush_every": 8,
    "cut": { "at": "acks", "acks": [16, 120] }, "boot_timeout_ms": 8000, "off_ms": 50 } ] }
JSON
	cp "$T/agent.key" "$T/$5/agent.key"
	cat > "$T/devices/$1.jinja2" <<J2
{% extends 'powercut-board.jinja2' %}
{% set power_on_command = "curl -sf 'http://127.0.0.1:$dport/power/control/on?hostname=lab&port=$2'" %}
{% set power_off_command = "curl -sf 'http://127.0.0.1:$dport/power/control/off?hostname=lab&port=$2'" %}
J2
	check "device $1 on worker $4" manage devices add --device-type powercut-board --worker "$4" "$1" --tags "$1"
	check "...its health is Good" manage devices update --health GOOD "$1"
	# the worker's dispatcher configuration: its own folder is the job's /lab
	cat > "$DD/$4.yaml" <<YAML
test_docker_bind_mounts:
- ["$ROOT", "$ROOT"]
- ["$T/$5", "/lab", "rw"]
YAML
}
board honest 1 honest "$W1" lab1
board lying 2 lying-flush "$W2" lab2

# ---- the server's daemons and the two workers, each its own process group ----
http=$(free_port)
URL="http://127.0.0.1:$http"
daemon() { # NAME CMD...: started in its own process group, its pid in $T/NAME.pid
	local n=$1
	shift
	setsid nice "$@" > "$T/log/$n.out" 2>&1 < /dev/null &
	echo $! > "$T/$n.pid"
}
daemon gunicorn gunicorn3 lava_server.wsgi --bind "127.0.0.1:$http" --workers 2 --worker-class eventlet --timeout 120 \
	--log-file "$T/log/gunicorn.log"
for _ in $(seq 600); do
	curl -sf "$URL/api/v0.2/system/version/" > "$T/version.json" 2> /dev/null && break
	sleep 0.2
done
check "lava-server answers under gunicorn (version $(jq -r .version "$T/version.json" 2> /dev/null))" \
	grep -q '"version"' "$T/version.json"
daemon scheduler lava-server manage lava-scheduler --level DEBUG --log-file "$T/log/scheduler.log" --event-url "$events"
daemon publisher lava-server manage lava-publisher --level DEBUG --log-file "$T/log/publisher.log" \
	--host 127.0.0.1 --port "$(free_port)"
n=0
for w in $W1 $W2; do
	n=$((n + 1))
	mkdir -p "$T/worker$n"
	daemon "worker$n" lava-worker --name "$w" --url "$URL/" --token "$(sed -n 's/^Token: //p' "$T/$w.out")" \
		--worker-dir "$T/worker$n" --log-file "$T/log/worker$n.log" --level DEBUG
done

# ---- one job per board, submitted with lavacli ----
LAVACLI="lavacli --uri http://admin:$(cat "$T/admin.token")@127.0.0.1:$http/RPC2"
submit() { # BOARD: the job pinned to the board by its tag; its id in $T/BOARD.id
	sed -e "s|@CAMPAIGN@|/lab/$1.json|; s|@RESULTS@|/lab/results/$1|; s|@POWERCUT@|$ROOT/build/powercut|; s|@TIMEOUT@|1200|" \
		-e "s|^device_type: .*|&\ntags: [$1]|" configs/lava/job.yaml > "$T/$1.job.yaml"
	$LAVACLI jobs submit "$T/$1.job.yaml" > "$T/$1.id" 2> "$T/$1.submit.err"
	check "lavacli submits board $1's job (id $(cat "$T/$1.id"))" grep -Eq '^[0-9]+$' "$T/$1.id"
}
submit honest
submit lying
for b in honest lying; do
	timeout 600 $LAVACLI jobs wait --polling 2 "$(cat "$T/$b.id")" > /dev/null 2>&1
	curl -sf "$URL/api/v0.2/jobs/$(cat "$T/$b.id")/" > "$T/$b.job.json"
	echo "  job $(cat "$T/$b.id") (board $b): $(jq -r '"\(.state), \(.health)"' "$T/$b.job.json" 2> /dev/null)"
	[ "$(jq -r .state "$T/$b.job.json" 2> /dev/null)" = Finished ] ||
		grep -E 'ERROR|→ Bad' "$T/log/scheduler.log" | tail -3
done

# ---- the results, read back through the server's API ----
jid() { cat "$T/$1.id"; }
n=0
for b in honest lying; do
	n=$((n + 1))
	w=$(eval echo "\$W$n")
	curl -sf "$URL/api/v0.2/devices/$b/" > "$T/$b.device.json"
	check "board $b's job ran on device $b" test "$(jq -r .actual_device "$T/$b.job.json")" = "$b"
	check "...which is worker $n's ($w)" test "$(jq -r .worker_host "$T/$b.device.json")" = "$w"
	check "...and worker $n's lava-worker process started it" grep -q "\[$(jid $b)\] server => START" "$T/log/worker$n.log"
done
check "...and worker 1 did not start the lying board's" sh -c "! grep -q '\[$(jid lying)\] server => START' '$T/log/worker1.log'"
for b in honest lying; do
	if ! check "board $b's job is Complete" test "$(jq -r .health "$T/$b.job.json")" = Complete; then
		curl -sf "$URL/api/v0.2/jobs/$(jid $b)/logs/" 2> /dev/null | grep -E "(error|exception)" | tail -4 | cut -c1-300
	fi
	# the test definition's suite (N_powercut), then its cases, through lavacli
	suite=$(curl -sf "$URL/api/v0.2/jobs/$(jid $b)/suites/" | jq -r '.results[].name | select(endswith("_powercut"))' | head -1)
	$LAVACLI results "$(jid $b)" "$suite" --json > "$T/$b.results.json" 2> "$T/$b.results.err"
	curl -sf "$URL/api/v0.2/jobs/$(jid $b)/junit/" > "$T/$b.junit.xml"
	check "...its JUnit export parses" "$PY" -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$T/$b.junit.xml"
done
result_of() { # BOARD CASE: the result lavacli read back
	jq -r --arg c "$2" '.[] | select(.name == $c) | .result' "$T/$1.results.json" 2> /dev/null | head -1
}
junit_of() { # BOARD CASE: pass or fail, as the JUnit export says
	"$PY" - "$T/$1.junit.xml" "$2" <<'PY'
import sys, xml.etree.ElementTree as E
for tc in E.parse(sys.argv[1]).getroot().iter("testcase"):
    if tc.get("name") == sys.argv[2]:
        print("fail" if tc.find("failure") is not None or tc.find("error") is not None else "pass")
        break
PY
}
for m in fua flush; do
	check "lavacli: powercut-honest-$m passed" test "$(result_of honest "powercut-honest-$m")" = pass
	check "...with records/s as its measurement" \
		test "$(jq -r --arg c "powercut-honest-$m" '.[] | select(.name == $c) | "\(.unit) \(.measurement | tonumber > 0)"' "$T/honest.results.json")" = "records/s true"
	check "...the JUnit export says pass" test "$(junit_of honest "powercut-honest-$m")" = pass
done
check "lavacli: powercut-lying-flush failed" test "$(result_of lying powercut-lying-flush)" = fail
check "...the JUnit export says fail" test "$(junit_of lying powercut-lying-flush)" = fail
check "lavacli: powercut-lying failed" test "$(result_of lying powercut-lying)" = fail

# ---- one per-device report over both workers' folders ----
"$ROOT/build/powercut" report --format json "$T/lab1/results/honest" "$T/lab2/results/lying" > "$T/all.json" 2> "$T/all.err"
rc=$?
check "powercut report over both workers' folders: exit 1, a device FAILed (was $rc)" test $rc -eq 1
check "...one report, both devices: honest PASS, lying FAIL" \
	test "$(jq -r '[.devices[] | "\(.boards | join("+")) \(.result)"] | sort | join(", ")' "$T/all.json")" = "honest PASS, lying FAIL"
check "...counting every cycle of both folders" \
	test "$(jq '[.devices[].modes[].cycles] | add' "$T/all.json")" -eq "$(cat "$T/lab1/results/honest/verdicts.jsonl" "$T/lab2/results/lying/verdicts.jsonl" | grep -c .)"
finish
