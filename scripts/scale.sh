#!/usr/bin/env bash
# scale.sh measures one exporter watching a whole account: `serve` against a
# separate `simulate` process, for each shape given as OBJECTSxMODULES
# (modules in all, split evenly over the objects; 1,000 parameters each,
# drift every 2 s). For each shape it reports:
#   start_s        process start until every object's session is up and
#                  every module's parameters are primed (all on /metrics)
#   logins         successful logins the simulated cloud answered by then
#   goroutines     go_goroutines in steady state (after SCALE_SETTLE seconds)
#   rss_kb, rss_anon_kb   VmRSS and RssAnon of the exporter then
#   per_object_*   goroutines and RssAnon divided by the objects
#   scrape_ms      median of 5 scrapes of /metrics with Prometheus's Accept
#                  header, and series, the samples in one answer
#
# Usage: scripts/scale.sh [OBJECTSxMODULES ...]   (default: 1x100 50x100)
# Prints one key=value line per shape.
set -euo pipefail

shapes=("$@")
[ ${#shapes[@]} -eq 0 ] && shapes=(1x100 50x100)
settle=${SCALE_SETTLE:-20}
cd "$(dirname "$0")/.."
work=$(mktemp -d)
bin=$work/bragerone_exporter
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
go build -o "$bin" .

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
accept='application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'

measure() {
	local objects=$1 modules=$2
	local sim_port exp_port
	sim_port=$(free_port)
	exp_port=$(free_port)
	"$bin" simulate --listen "127.0.0.1:$sim_port" --objects "$objects" --modules "$modules" \
		--params-per-module 1000 --drift-interval 2s --log.level warn >"$work/sim.log" 2>&1 &
	local sim_pid=$!
	pids+=("$sim_pid")
	for _ in $(seq 200); do
		curl -fs "http://127.0.0.1:$sim_port/control/state" >/dev/null 2>&1 && break
		sleep 0.05
	done
	local t0
	t0=$(date +%s.%N)
	BRAGERONE_PASSWORD=demo-password "$bin" serve --cloud.url "http://127.0.0.1:$sim_port" \
		--cloud.email demo@example.com --web.listen-address "127.0.0.1:$exp_port" --log.level warn \
		>"$work/serve.log" 2>&1 &
	local exp_pid=$!
	pids+=("$exp_pid")
	local t1="" m
	for _ in $(seq 3000); do
		m=$(curl -fs "http://127.0.0.1:$exp_port/metrics" 2>/dev/null || true)
		if [ -n "$m" ] && awk -v o="$objects" -v n="$modules" '
			/^bragerone_session_up\{/ && $2 == 1 {up++}
			/^bragerone_parameters\{/ && $2 >= 1000 {primed++}
			END {exit !(up == o && primed == n)}' <<<"$m"; then
			t1=$(date +%s.%N)
			break
		fi
		sleep 0.05
	done
	if [ -z "$t1" ]; then
		echo "shape ${objects}x${modules}: not primed in time; log:" >&2
		tail -20 "$work/serve.log" >&2
		exit 1
	fi
	local logins
	logins=$(curl -fs "http://127.0.0.1:$sim_port/control/state" | python3 -c 'import json,sys; print(json.load(sys.stdin)["logins"])')
	sleep "$settle"
	local goroutines rss anon series
	goroutines=$(curl -fs "http://127.0.0.1:$exp_port/metrics" | awk '/^go_goroutines / {print $2}')
	rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$exp_pid/status")
	anon=$(awk '/^RssAnon:/ {print $2}' "/proc/$exp_pid/status")
	local times=()
	for _ in 1 2 3 4 5; do
		times+=("$(curl -fs -o "$work/scrape" -H "Accept: $accept" -H 'Accept-Encoding: gzip' -w '%{time_total}' "http://127.0.0.1:$exp_port/metrics")")
	done
	series=$(curl -fs -H "Accept: $accept" "http://127.0.0.1:$exp_port/metrics" | grep -c '^[a-z]')
	local scrape
	scrape=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[3]*1000}')
	awk -v o="$objects" -v n="$modules" -v s="$t0" -v e="$t1" -v l="$logins" -v g="$goroutines" -v r="$rss" \
		-v a="$anon" -v sc="$scrape" -v se="$series" 'BEGIN {
		printf "shape=%dx%dx1000 start_s=%.2f logins=%d goroutines=%d per_object_goroutines=%.1f rss_kb=%d rss_anon_kb=%d per_object_rss_anon_kb=%.0f scrape_ms=%s series=%d\n",
			o, n, e - s, l, g, g / o, r, a, a / o, sc, se }'
	kill "$exp_pid" "$sim_pid" 2>/dev/null || true
	wait "$exp_pid" "$sim_pid" 2>/dev/null || true
}

for shape in "${shapes[@]}"; do
	measure "${shape%x*}" "${shape#*x}"
done
