#!/usr/bin/env bash
# cloudcost.sh counts what one exporter asks of the cloud: `serve` at its
# default settings against a separate `simulate` process with one object
# (3 modules, drift every 2 s), read from the exporter's own /metrics:
#   REST requests     bragerone_http_requests_total, by endpoint template
#                     (every status code together: a failed request costs
#                     the cloud too)
#   handshakes        bragerone_realtime_events_total{event="connect"}: the
#                     Socket.IO sessions that joined (one handshake each; a
#                     handshake the cloud refused is not counted)
# The start (login, object and module lists, the first prime, ...) is left
# out: counting begins once the exporter is ready plus COST_SETTLE seconds.
#
# Three scenarios, each its own simulator and exporter, run side by side
# over the same [seconds] (default 1800):
#   healthy   nothing happens; the count is scaled to an hour
#   outage    every /v1 request is answered 503 for COST_OUTAGE seconds
#             (default 300), from 60 s into the window
#   zombie    the cloud's pushes are muted (mute_pushes) for COST_ZOMBIE
#             seconds (default 360, long enough for the zombie ladder's
#             first hard restart), from 60 s into the window
# An hour with an episode is the episode's window as counted plus the
# healthy rate over the rest of the hour; a day is that hour plus 23 healthy
# hours. A fault longer than half the window is cut to half (smoke runs).
#
# The window should span the exporter's slowest cadence, the safety reads
# of its lists (--history.safety-interval, 15 min): a shorter one may see
# none of them and scale that to an hour.
#
# Usage: scripts/cloudcost.sh [seconds]
#   COST_BEFORE_BIN   an exporter binary built from an earlier commit: its
#                     scenarios run in the same run, beside this tree's
#   COST_SETTLE       seconds after ready before counting (default 30)
#   COST_LOGS=DIR     keep the simulators' and exporters' logs in DIR
#   COST_LOG_LEVEL    the exporters' log level (default warn)
# Prints key=value lines (<target>.<scenario>.<endpoint>=<count in window>)
# and a Markdown table of requests per object per hour and per day.
set -euo pipefail

seconds=${1:-1800}
settle=${COST_SETTLE:-30}
outage=${COST_OUTAGE:-300}
zombie=${COST_ZOMBIE:-360}
fault_at=60
[ "$outage" -gt $((seconds / 2)) ] && outage=$((seconds / 2))
[ "$zombie" -gt $((seconds / 2)) ] && zombie=$((seconds / 2))
[ "$fault_at" -gt $((seconds / 4)) ] && fault_at=$((seconds / 4))
cd "$(dirname "$0")/.."
work=$(mktemp -d)
bin=$work/bragerone_exporter
pids=()
cleanup() {
	# The scenarios' processes, then the scenarios themselves.
	[ -f "$work/pids" ] && kill $(cat "$work/pids") 2>/dev/null || true
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
go build -o "$bin" .

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() { # url: until it answers 200, at most 120 s
	for _ in $(seq 1200); do
		curl -fs -o /dev/null "$1" && return 0
		sleep 0.1
	done
	echo "cloudcost: $1 never answered" >&2
	return 1
}

# scenario TARGET EXE NAME: one simulator and one exporter; writes the
# /metrics answers at the start and the end of the window to
# $work/TARGET.NAME.{0,1}.
scenario() {
	local target=$1 exe=$2 name=$3 sim_port exp_port
	local out=$work/$target.$name
	sim_port=$(free_port)
	exp_port=$(free_port)
	local sim=http://127.0.0.1:$sim_port url=http://127.0.0.1:$exp_port
	"$bin" simulate --listen "127.0.0.1:$sim_port" --objects 1 --modules 3 --log.level warn >"$out.sim.log" 2>&1 &
	echo $! >>"$work/pids"
	wait_for "$sim/control/state"
	BRAGERONE_PASSWORD=demo-password "$exe" serve --cloud.url "$sim" --cloud.assets-url "$sim" \
		--cloud.email demo@example.com --web.listen-address "127.0.0.1:$exp_port" --log.level "${COST_LOG_LEVEL:-warn}" \
		>"$out.serve.log" 2>&1 &
	echo $! >>"$work/pids"
	wait_for "$url/-/ready" || { tail -20 "$out.serve.log" >&2; exit 1; }
	sleep "$settle"
	curl -fs "$url/metrics" >"$out.0"
	local fault="" length=0
	case $name in
	outage) fault='{"kind":"http_status","status":503}' length=$outage ;;
	zombie) fault='{"kind":"mute_pushes"}' length=$zombie ;;
	esac
	if [ -n "$fault" ]; then
		sleep "$fault_at"
		curl -fs -X POST -d "$fault" "$sim/control/faults" >/dev/null
		sleep "$length"
		curl -fs -X DELETE "$sim/control/faults" >/dev/null
		sleep $((seconds - fault_at - length))
	else
		sleep "$seconds"
	fi
	curl -fs "$url/metrics" >"$out.1"
}

targets=(after)
exes=("$bin")
if [ -n "${COST_BEFORE_BIN:-}" ]; then
	targets=(before after)
	exes=("$COST_BEFORE_BIN" "$bin")
fi
runs=()
for i in "${!targets[@]}"; do
	for name in healthy outage zombie; do
		scenario "${targets[$i]}" "${exes[$i]}" "$name" &
		pids+=($!)
		runs+=("${targets[$i]}.$name")
	done
done
for p in "${pids[@]}"; do wait "$p"; done
pids=()
if [ -n "${COST_LOGS:-}" ]; then
	mkdir -p "$COST_LOGS"
	cp "$work"/*.log "$COST_LOGS"/
fi

SECONDS_WINDOW=$seconds OUTAGE=$outage ZOMBIE=$zombie WORK=$work python3 - "${runs[@]}" <<'EOF'
import os, re, sys
from collections import defaultdict

work, window = os.environ["WORK"], float(os.environ["SECONDS_WINDOW"])
sample = re.compile(r'^(bragerone_http_requests_total|bragerone_realtime_events_total)\{(.*)\} (\S+)$')
label = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
HANDSHAKES = "Socket.IO handshakes"

def counts(path):
    out = defaultdict(float)
    for line in open(path):
        m = sample.match(line.strip())
        if not m:
            continue
        labels = dict(label.findall(m.group(2)))
        if m.group(1) == "bragerone_http_requests_total":
            out[labels["endpoint"]] += float(m.group(3))
        elif labels.get("event") == "connect":
            out[HANDSHAKES] += float(m.group(3))
    return out

delta = {}
for run in sys.argv[1:]:
    a, b = counts(f"{work}/{run}.0"), counts(f"{work}/{run}.1")
    delta[run] = {k: b[k] - a.get(k, 0) for k in b}
    for k, v in sorted(delta[run].items()):
        print(f"{run}.{k.replace(' ', '_')}={v:g}")

targets = sorted({r.split(".")[0] for r in delta}, key=lambda t: t != "before")
print(f"\n# window {window:g} s; outage {os.environ['OUTAGE']} s of 503; zombie {os.environ['ZOMBIE']} s of muted pushes")
print("\n| endpoint | " + " | ".join(f"{t}: healthy /h | {t}: healthy /day | {t}: hour with an outage | {t}: hour with a zombie" for t in targets) + " |")
print("|---|" + "---|" * (4 * len(targets)))
keys = sorted({k for d in delta.values() for k in d if k != HANDSHAKES})
def cells(t, k):
    h = delta[f"{t}.healthy"].get(k, 0) * 3600 / window
    rest = (3600 - window) / window * delta[f"{t}.healthy"].get(k, 0)
    o = delta[f"{t}.outage"].get(k, 0) + rest
    z = delta[f"{t}.zombie"].get(k, 0) + rest
    return h, h * 24, o, z
def row(name, vals):
    print(f"| {name} | " + " | ".join(f"{v:.0f}" for v in vals) + " |")
total = defaultdict(float)
for k in keys:
    vals = [v for t in targets for v in cells(t, k)]
    if not any(round(v) for v in vals):
        continue
    for i, v in enumerate(vals):
        total[i] += v
    row(f"`{k}`", vals)
row("**all REST**", [total[i] for i in range(4 * len(targets))])
row(HANDSHAKES, [v for t in targets for v in cells(t, HANDSHAKES)])
EOF
