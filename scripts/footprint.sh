#!/usr/bin/env bash
# footprint.sh measures the RSS and CPU of `bragerone_exporter serve` against
# a separate `bragerone_exporter simulate` process (10 modules x 1000
# parameters, drift every 600 ms: about 50 live parameter updates/s), scraping
# /metrics every 15 s as Prometheus would. FOOTPRINT_MODULES=100 runs 100
# modules instead.
#
# Usage: scripts/footprint.sh [seconds]   (default 300; the first 15 s after
# the exporter is ready are not measured)
# Prints key=value lines: rss_max_kb, rss_end_kb, cpu_pct, events_per_s, ...
set -euo pipefail

duration=${1:-300}
warmup=15
cd "$(dirname "$0")/.."
work=$(mktemp -d)
bin=$work/bragerone_exporter
sim_pid="" exp_pid=""
cleanup() {
	[ -n "$exp_pid" ] && kill "$exp_pid" 2>/dev/null || true
	[ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$bin" .

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
sim_port=$(free_port)
exp_port=$(free_port)

"$bin" simulate --listen "127.0.0.1:$sim_port" --modules "${FOOTPRINT_MODULES:-10}" --params-per-module 1000 \
	--drift-interval 600ms --log.level warn >"$work/sim.log" 2>&1 &
sim_pid=$!
for _ in $(seq 100); do
	curl -fs "http://127.0.0.1:$sim_port/control/state" >/dev/null 2>&1 && break
	sleep 0.1
done

BRAGERONE_PASSWORD=demo-password "$bin" serve --cloud.url "http://127.0.0.1:$sim_port" \
	--cloud.assets-url "http://127.0.0.1:$sim_port" --cloud.email demo@example.com \
	--web.listen-address "127.0.0.1:$exp_port" --log.level warn >"$work/serve.log" 2>&1 &
exp_pid=$!
ready=0
for _ in $(seq 300); do
	if curl -fs "http://127.0.0.1:$exp_port/-/ready" >/dev/null 2>&1; then ready=1; break; fi
	sleep 0.1
done
if [ "$ready" != 1 ]; then
	echo "exporter not ready; log:" >&2
	cat "$work/serve.log" >&2
	exit 1
fi

tck=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
events() {
	curl -fs "http://127.0.0.1:$exp_port/metrics" |
		awk '/^bragerone_realtime_events_total\{event="params_change"\}/ {print $2}'
}
params() {
	curl -fs "http://127.0.0.1:$exp_port/metrics" |
		awk '/^bragerone_parameters\{/ {s += $2} END {print s + 0}'
}

sleep "$warmup"
t0=$(date +%s.%N)
c0=$(cpu_ticks "$exp_pid")
s0=$(cpu_ticks "$sim_pid")
e0=$(events)
rss_max=0
next_scrape=0
elapsed=0
while awk -v e="$elapsed" -v d="$duration" 'BEGIN {exit !(e < d)}'; do
	if awk -v e="$elapsed" -v n="$next_scrape" 'BEGIN {exit !(e >= n)}'; then
		curl -fs "http://127.0.0.1:$exp_port/metrics" >/dev/null
		next_scrape=$((next_scrape + 15))
	fi
	r=$(rss_kb "$exp_pid")
	[ "$r" -gt "$rss_max" ] && rss_max=$r
	sleep 1
	elapsed=$(awk -v t0="$t0" -v now="$(date +%s.%N)" 'BEGIN {print now - t0}')
done
t1=$(date +%s.%N)
c1=$(cpu_ticks "$exp_pid")
s1=$(cpu_ticks "$sim_pid")
e1=$(events)
wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
echo "duration_s=$wall"
echo "stored_params=$(params)"
echo "rss_max_kb=$rss_max"
echo "rss_end_kb=$(rss_kb "$exp_pid")"
echo "rss_hwm_kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$exp_pid/status")"
# The RSS in two parts: private memory (heap, stacks, runtime) and the
# executable's and libraries' file pages, which are shared and clean.
echo "rss_anon_end_kb=$(awk '/^RssAnon:/ {print $2}' "/proc/$exp_pid/status")"
echo "rss_file_end_kb=$(awk '/^RssFile:/ {print $2}' "/proc/$exp_pid/status")"
awk -v c0="$c0" -v c1="$c1" -v t="$tck" -v w="$wall" 'BEGIN {printf "exporter_cpu_pct_of_core=%.3f\n", 100 * (c1 - c0) / t / w}'
awk -v c0="$s0" -v c1="$s1" -v t="$tck" -v w="$wall" 'BEGIN {printf "simulator_cpu_pct_of_core=%.3f\n", 100 * (c1 - c0) / t / w}'
awk -v a="$e0" -v b="$e1" -v w="$wall" 'BEGIN {printf "params_change_events_per_s=%.2f\n", (b - a) / w}'
# The Go runtime's own view of the exporter's memory, for where the RSS goes.
curl -fs "http://127.0.0.1:$exp_port/metrics" | awk '
	/^go_memstats_(heap_alloc|heap_inuse|heap_idle|heap_released|stack_inuse|sys|next_gc)_bytes / {print $1 "=" $2}
	/^go_goroutines / {print "go_goroutines=" $2}
	/^go_gc_gogc_percent / {print "gogc=" $2}'
# RESIDENCY=1: which parts of the executable are resident at the end, as
# comment lines (scripts/residency.py; needs the present bits of
# /proc/<pid>/pagemap, which only root reads).
if [ "${RESIDENCY:-}" = 1 ]; then
	python3 scripts/residency.py "$exp_pid" "$bin" | sed 's/^/# /'
fi
