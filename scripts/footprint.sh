#!/usr/bin/env bash
# footprint.sh measures the memory of `bragerone_exporter serve` against a
# separate `bragerone_exporter simulate` process (drift every second), beside
# the naive client_golang exporter of the same account
# (serving/naive_bench_test.go: encoding/json, a map per module, one
# MustNewConstMetric per series) and, with FOOTPRINT_BEFORE_BIN, an earlier
# build of the exporter, all in one run, one process at a time against the
# same simulator.
#
# For each size it reports, after the target is ready and has answered 5
# scrapes with Prometheus's request (2.42's Accept header, gzip), one second
# apart:
#   rss_anon_kb, rss_file_kb  private and file-backed resident memory
#                             (/proc/PID/status RssAnon, RssFile)
#   hwm_kb                    the peak resident set so far (VmHWM): start-up,
#                             the first prime, the scrapes
#   live_heap_b               the Go heap right after a forced collection
#                             (/debug/pprof/heap?gc=1&debug=1, HeapAlloc)
#   live_heap_b_per_param     that, per stored parameter of the account
#   heap_alloc_b              go_memstats_heap_alloc_bytes in the 5th answer
#                             (live heap plus garbage not yet collected)
# then, over [seconds] (default 60; 0 skips it) of scrapes every 15 s:
#   rss_anon_end_kb, hwm_end_kb, rss_max_kb and the CPU share of one core.
#
# Usage: scripts/footprint.sh [seconds]
#   FOOTPRINT_SIZES   sizes to run (default "10x1000 100x1000 50x2x1000"):
#                     MODULESxPARAMS (one object), or OBJECTSxMODULESxPARAMS
#                     for an account of several objects, MODULES each
#   FOOTPRINT_BEFORE_BIN  an exporter binary built from an earlier commit
#   FOOTPRINT_NAIVE=0     leave the naive exporter out
#   RESIDENCY=1       which parts of the executable are resident at the end
#                     (scripts/residency.py; needs root)
#   FOOTPRINT_ACCOUNT=DIR  the byte account: the exporters run with
#                     GODEBUG=memprofilerate=4096 (which costs them some
#                     2 MB of profile buckets: take the other figures from a
#                     run without it), their heap profiles after the 5
#                     scrapes go to DIR, and scripts/heapowners.py prints
#                     the live heap of each size by owner
# Prints key=value lines (<target>.<size>.<key>=<value>) and a Markdown table.
set -euo pipefail

seconds=${1:-60}
sizes=${FOOTPRINT_SIZES:-"10x1000 100x1000 50x2x1000"}
cd "$(dirname "$0")/.."
work=$(mktemp -d)
bin=$work/bragerone_exporter
naive=$work/serving.test
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$bin" .
[ -n "${FOOTPRINT_ACCOUNT:-}" ] && mkdir -p "$FOOTPRINT_ACCOUNT"
[ "${FOOTPRINT_NAIVE:-1}" = 1 ] && go test -c -o "$naive" ./serving/
accept=$(sed -n 's/^\tPrometheus2Accept = "\(.*\)"$/\1/p' internal/promrequest/promrequest.go)
[ -n "$accept" ] || { echo "footprint: no Prometheus Accept header in internal/promrequest" >&2; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
tck=$(getconf CLK_TCK)
wait_for() { # url: until it answers 200, at most 120 s
	for _ in $(seq 1200); do
		curl -fs -o /dev/null "$1" && return 0
		sleep 0.1
	done
	echo "footprint: $1 never answered" >&2
	return 1
}
scrape() { curl -fs --compressed -H "Accept: $accept" -H "Accept-Encoding: gzip" "$1/metrics"; }

rows=()
# measure TARGET SIZE PID URL PARAMS: the figures of one running target.
measure() {
	local target=$1 size=$2 pid=$3 url=$4 params=$5 body
	for i in 1 2 3 4 5; do
		body=$(scrape "$url")
		[ "$i" -lt 5 ] && sleep 1
	done
	local anon file hwm heap_alloc live
	anon=$(status_kb "$pid" RssAnon)
	file=$(status_kb "$pid" RssFile)
	hwm=$(status_kb "$pid" VmHWM)
	heap_alloc=$(awk '/^go_memstats_heap_alloc_bytes / {printf "%d", $2}' <<<"$body")
	live=$(curl -fs "$url/debug/pprof/heap?gc=1&debug=1" | awk '/^# HeapAlloc = / {print $4}')
	local per=$(awk -v l="$live" -v p="$params" 'BEGIN {printf "%.1f", l / p}')
	local p="$target.$size"
	echo "$p.stored_params=$params"
	echo "$p.rss_anon_kb=$anon"
	echo "$p.rss_file_kb=$file"
	echo "$p.hwm_kb=$hwm"
	echo "$p.live_heap_b=$live"
	echo "$p.live_heap_b_per_param=$per"
	echo "$p.heap_alloc_b=$heap_alloc"
	if [ -n "${FOOTPRINT_ACCOUNT:-}" ] && [ "$target" != naive ]; then
		curl -fs "$url/debug/pprof/heap?gc=1" -o "$FOOTPRINT_ACCOUNT/$target-$size.pb.gz"
	fi
	local end_anon="-" end_hwm="-" rss_max="-" cpu="-"
	if [ "$seconds" -gt 0 ]; then
		local c0 t0 next=0 elapsed=0 r
		c0=$(cpu_ticks "$pid")
		t0=$(date +%s.%N)
		rss_max=0
		while awk -v e="$elapsed" -v d="$seconds" 'BEGIN {exit !(e < d)}'; do
			if awk -v e="$elapsed" -v n="$next" 'BEGIN {exit !(e >= n)}'; then
				scrape "$url" >/dev/null
				next=$((next + 15))
			fi
			r=$(status_kb "$pid" VmRSS)
			[ "$r" -gt "$rss_max" ] && rss_max=$r
			sleep 1
			elapsed=$(awk -v t0="$t0" -v now="$(date +%s.%N)" 'BEGIN {print now - t0}')
		done
		end_anon=$(status_kb "$pid" RssAnon)
		end_hwm=$(status_kb "$pid" VmHWM)
		cpu=$(awk -v c0="$c0" -v c1="$(cpu_ticks "$pid")" -v t="$tck" -v w="$elapsed" 'BEGIN {printf "%.2f", 100 * (c1 - c0) / t / w}')
		echo "$p.rss_anon_end_kb=$end_anon"
		echo "$p.hwm_end_kb=$end_hwm"
		echo "$p.rss_max_kb=$rss_max"
		echo "$p.cpu_pct_of_core=$cpu"
	fi
	mb() { [ "$1" = "-" ] && echo "-" || awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }
	rows+=("| $size | $target | $(mb "$anon") | $(mb "$file") | $(mb "$hwm") | $(awk -v b="$live" 'BEGIN {printf "%.1f", b / 1048576}') ($per B) | $(awk -v b="$heap_alloc" 'BEGIN {printf "%.1f", b / 1048576}') | $(mb "$end_anon") / $(mb "$end_hwm") | $cpu |")
}

for size in $sizes; do
	IFS=x read -r -a dims <<<"$size"
	objects=1
	if [ "${#dims[@]}" = 3 ]; then
		objects=${dims[0]} modules=${dims[1]} per=${dims[2]}
	else
		modules=${dims[0]} per=${dims[1]}
	fi
	sim_args=(--modules "$((objects * modules))" --params-per-module "$per")
	# The help is read whole first: grep -q leaving early would fail the
	# pipeline (pipefail) when the help is still being written.
	sim_help=$("$bin" simulate --help 2>&1)
	if grep -q -- '--objects' <<<"$sim_help"; then
		sim_args+=(--objects "$objects") # the modules split over that many objects
	elif [ "$objects" != 1 ]; then
		echo "# $size: skipped, \`simulate\` has no --objects"
		echo "skipped.$size=no simulate --objects"
		continue
	fi
	params=$((objects * modules * per))
	sim_port=$(free_port)
	sim_url=http://127.0.0.1:$sim_port
	"$bin" simulate --listen "127.0.0.1:$sim_port" "${sim_args[@]}" --drift-interval 1s --log.level warn >"$work/sim-$size.log" 2>&1 &
	sim_pid=$!
	pids+=("$sim_pid")
	wait_for "$sim_url/control/state"

	targets=(exporter)
	[ -n "${FOOTPRINT_BEFORE_BIN:-}" ] && targets+=(before)
	[ "${FOOTPRINT_NAIVE:-1}" = 1 ] && targets+=(naive)
	for target in "${targets[@]}"; do
		echo "## $size: $target" >&2
		if [ "$target" = naive ]; then
			coproc NAIVE { BRAGERONE_BENCH_SERVE=naive BRAGERONE_BENCH_CLOUD=$sim_url exec "$naive" 2>"$work/naive-$size.log"; }
			pid=$NAIVE_PID
			pids+=("$pid")
			read -r addr <&"${NAIVE[0]}" || { cat "$work/naive-$size.log" >&2; exit 1; }
			url=http://$addr
			measure naive "$size" "$pid" "$url" "$params"
			eval "exec ${NAIVE[1]}>&-"
			wait "$pid" 2>/dev/null || true
			continue
		fi
		exe=$bin
		[ "$target" = before ] && exe=$FOOTPRINT_BEFORE_BIN
		port=$(free_port)
		url=http://127.0.0.1:$port
		BRAGERONE_PASSWORD=demo-password GODEBUG=${FOOTPRINT_ACCOUNT:+memprofilerate=4096} "$exe" serve --cloud.url "$sim_url" --cloud.assets-url "$sim_url" \
			--cloud.email demo@example.com --web.listen-address "127.0.0.1:$port" --log.level warn \
			>"$work/serve-$target-$size.log" 2>&1 &
		pid=$!
		pids+=("$pid")
		wait_for "$url/-/ready" || { cat "$work/serve-$target-$size.log" >&2; exit 1; }
		measure "$target" "$size" "$pid" "$url" "$params"
		if [ "${RESIDENCY:-}" = 1 ] && [ "$target" = exporter ]; then
			python3 scripts/residency.py "$pid" "$exe" | sed "s/^/# $size: /"
		fi
		kill "$pid"
		wait "$pid" 2>/dev/null || true
	done
	kill "$sim_pid"
	wait "$sim_pid" 2>/dev/null || true
done

if [ -n "${FOOTPRINT_ACCOUNT:-}" ]; then
	cp "$bin" "$FOOTPRINT_ACCOUNT/exporter"
	[ -n "${FOOTPRINT_BEFORE_BIN:-}" ] && cp "$FOOTPRINT_BEFORE_BIN" "$FOOTPRINT_ACCOUNT/before"
	for size in $sizes; do
		[ -f "$FOOTPRINT_ACCOUNT/exporter-$size.pb.gz" ] || continue
		IFS=x read -r -a dims <<<"$size"
		n=1
		for d in "${dims[@]}"; do n=$((n * d)); done
		echo
		echo "# live heap by owner, $size (MB, and B per stored parameter); profiles in $FOOTPRINT_ACCOUNT"
		args=()
		for target in before exporter; do
			[ -f "$FOOTPRINT_ACCOUNT/$target-$size.pb.gz" ] && args+=("$FOOTPRINT_ACCOUNT/$target" "$FOOTPRINT_ACCOUNT/$target-$size.pb.gz")
		done
		STORED_PARAMS=$n python3 scripts/heapowners.py "${args[@]}"
	done
fi

echo
echo "| account | target | RssAnon MB | RssFile MB | VmHWM MB | live heap MB (per stored parameter) | heap_alloc at the 5th scrape MB | after ${seconds} s: RssAnon / VmHWM MB | CPU % of a core |"
echo "|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
