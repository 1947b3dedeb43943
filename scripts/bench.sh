#!/usr/bin/env bash
# bench.sh runs the exporter's performance figures (see BENCHMARKS.md) and
# prints one table of medians, each figure next to its same-run baseline.
#
#   scripts/bench.sh                    # everything, footprint for 60 s a target
#   COUNT=3 FOOTPRINT_SECONDS=0 scripts/bench.sh
#   OUT=/tmp/bench scripts/bench.sh     # keep raw outputs and profiles there
#   STEPS="ingest" OUT=/tmp/bench scripts/bench.sh   # rerun some steps, reprint the table
#   BEFORE=main STEPS="scrape http prometheus footprint" scripts/bench.sh
#                                       # the same figures for an earlier commit, in the same run
#
# Steps: scrape compress store peaks ingest recovery footprint http
# prometheus (default: all). peaks: the live heap a 100k-series scrape and a
# 100-module prime hold at their highest (BenchmarkScrapePeak, for BEFORE
# too; BenchmarkPrimePeak).
# http and prometheus run each /metrics handler in a process of its own
# (serving/promscrape_bench_test.go); prometheus runs PROMETHEUS (default:
# `prometheus` on the PATH, Debian's package) and scrapes for
# PROMETHEUS_SECONDS (default 90) every PROMETHEUS_INTERVAL (default 5s).
# FOOTPRINT_SIZES (default "10x1000 100x1000 50x2x1000") sets the accounts
# the footprint step measures (scripts/footprint.sh), FOOTPRINT_SECONDS
# (default 60) how long each target is watched after its 5 scrapes.
#
# BEFORE=<commit> builds that commit's tree in $OUT/before-tree with this
# tree's benchmark harness files copied in (the harness uses only the
# collector's, handler's and store's public API; for a commit from before
# the handler moved from collector/ to serving/, they are copied into
# collector/ and call collector.NewHandler), and runs the scrape, http,
# prometheus and footprint steps for it too: scrape alternately with this
# tree, http and prometheus as a third server process beside this tree's
# exporter and the baseline, footprint as a target of its own against the
# same simulator, right after this tree's.
#
# Raw `go test -bench` outputs, CPU profiles and the test binaries that go
# with them are kept in $OUT; benchstat (golang.org/x/perf/cmd/benchstat) is
# used for a summary when it is installed.
set -euo pipefail

cd "$(dirname "$0")/.."
COUNT=${COUNT:-5}
FOOTPRINT_SECONDS=${FOOTPRINT_SECONDS:-60}
OUT=${OUT:-$(mktemp -d -t bragerone-bench.XXXXXX)}
mkdir -p "$OUT"
GO=${GO:-go}
STEPS=" ${STEPS:-scrape compress store peaks ingest recovery footprint http prometheus} "
BEFORE=${BEFORE:-}
export FOOTPRINT_SIZES=${FOOTPRINT_SIZES:-"10x1000 100x1000 50x2x1000"}
step() { [[ $STEPS == *" $1 "* ]]; }

echo "# $(date -u +%Y-%m-%dT%H:%MZ)  $($GO version)  $(nproc) cores  load: $(cut -d' ' -f1-3 /proc/loadavg)  steps:$STEPS" | tee -a "$OUT/env.txt"
echo "# raw outputs and profiles: $OUT"

run() { # name, package, go test flags...
	local name=$1 pkg=$2
	shift 2
	echo "## $name" >&2
	$GO test -run '^$' "$@" "$pkg" | tee "$OUT/$name.txt" >&2
}

before_tree=$OUT/before-tree
if [ -n "$BEFORE" ]; then
	rm -rf "$before_tree"
	mkdir -p "$before_tree"
	git archive "$BEFORE" | tar -x -C "$before_tree"
	harness=(serving/scrape_bench_test.go serving/promscrape_bench_test.go serving/naive_bench_test.go)
	if [ -d "$before_tree/serving" ]; then
		cp "${harness[@]}" "$before_tree/serving/"
		before_pkg=./serving/
	else
		for f in "${harness[@]}"; do
			sed -e 's/^package serving_test$/package collector_test/' -e '/bragerone_exporter\/serving"$/d' \
				-e 's/serving\.NewHandler(/collector.NewHandler(/g' "$f" >"$before_tree/collector/${f##*/}"
		done
		before_pkg=./collector/
	fi
	if [ ! -d "$before_tree/wire" ]; then
		# Before package wire, the parameter update type was cloudclient's.
		for f in "${harness[@]}"; do
			sed -i -e 's/\bwire\.ParamUpdate\b/cloudclient.ParamUpdate/g' \
				-e 's#bragerone_exporter/wire"$#bragerone_exporter/cloudclient"#' "$before_tree/${before_pkg#./}${f##*/}"
		done
	fi
	if [ ! -d "$before_tree/internal/promrequest" ]; then
		# The harness serves the recorded Prometheus requests.
		mkdir -p "$before_tree/internal/promrequest"
		cp internal/promrequest/promrequest.go "$before_tree/internal/promrequest/"
	fi
	(cd "$before_tree" && $GO test -c -o "$OUT/before-serving.test" "$before_pkg")
	echo "# before: $BEFORE ($(git rev-parse --short "$BEFORE")) in $before_tree" | tee -a "$OUT/env.txt"
fi

if step scrape; then
	if [ -z "$BEFORE" ]; then
		run scrape ./serving/ -bench '^BenchmarkScrape$' -benchmem -count "$COUNT" \
			-cpuprofile "$OUT/scrape.cpu" -o "$OUT/serving.test"
	else
		# Alternately, one run each, so that both see the same load.
		$GO test -c -o "$OUT/serving.test" ./serving/
		: >"$OUT/scrape.txt"
		: >"$OUT/scrape_before.txt"
		for i in $(seq "$COUNT"); do
			echo "## scrape, round $i of $COUNT" >&2
			"$OUT/serving.test" -test.run '^$' -test.bench '^BenchmarkScrape$' -test.benchmem | tee -a "$OUT/scrape.txt" >&2
			"$OUT/before-serving.test" -test.run '^$' -test.bench '^BenchmarkScrape$' -test.benchmem | tee -a "$OUT/scrape_before.txt" >&2
		done
	fi
fi
if step compress; then
	run compress ./serving/ -bench '^BenchmarkCompress$' -benchmem -count 1
fi
if step store; then
	run decode_store ./realtime/store/ -bench '^(BenchmarkDecodeAndStore|BenchmarkStoreFootprint)$' -benchmem -count "$COUNT" \
		-memprofile "$OUT/store.mem" -o "$OUT/store.test"
fi
if step peaks; then
	run scrape_peak ./serving/ -bench '^BenchmarkScrapePeak$' -benchtime 3x -count "$COUNT" -o "$OUT/serving.test"
	if [ -n "$BEFORE" ]; then
		"$OUT/before-serving.test" -test.run '^$' -test.bench '^BenchmarkScrapePeak$' -test.benchtime 3x \
			-test.count "$COUNT" | tee "$OUT/scrape_peak_before.txt" >&2
	fi
	run prime_peak ./realtime/store/ -bench '^BenchmarkPrimePeak$' -benchtime 3x -count "$COUNT"
fi
if step ingest; then
	for sub in transport-only/setparam transport-only/drift setparam drift; do
		tag=${sub//\//_}
		run "ingest_$tag" ./realtime/ -bench "^BenchmarkIngest\$/^${sub}\$" -benchtime 2s -count "$COUNT" \
			-cpuprofile "$OUT/ingest_$tag.cpu" -o "$OUT/realtime.test"
		$GO tool pprof -tags "$OUT/realtime.test" "$OUT/ingest_$tag.cpu" >"$OUT/ingest_$tag.tags" 2>/dev/null || true
	done
fi
if step recovery; then
	run recovery ./realtime/ -bench '^BenchmarkRecovery$' -benchtime 50x -count 1
fi
if step footprint; then
	echo "## footprint ($FOOTPRINT_SIZES; ${FOOTPRINT_SECONDS}s a target after its 5 scrapes)" >&2
	before_bin=""
	if [ -n "$BEFORE" ]; then
		(cd "$before_tree" && $GO build -o "$OUT/before-exporter" .)
		before_bin=$OUT/before-exporter
	fi
	FOOTPRINT_BEFORE_BIN=$before_bin scripts/footprint.sh "$FOOTPRINT_SECONDS" | tee "$OUT/footprint.txt" >&2
fi
servers_env=(BRAGERONE_BENCH_SERVERS=1)
[ -n "$BEFORE" ] && servers_env+=(BRAGERONE_BENCH_BEFORE="$OUT/before-serving.test")
if step http; then
	echo "## http" >&2
	env "${servers_env[@]}" $GO test -run '^$' -bench '^BenchmarkHTTPScrape$' -benchtime "${HTTP_BENCHTIME:-10x}" -count 1 ./serving/ |
		tee "$OUT/http.txt" >&2
fi
if step prometheus; then
	echo "## prometheus (${PROMETHEUS_SECONDS:-90}s)" >&2
	prometheus_bin=${PROMETHEUS:-$(command -v prometheus || true)}
	# The module version tells a build from the module (go install) apart;
	# its --version line is unstamped.
	echo "# prometheus: $prometheus_bin, $("${prometheus_bin:-prometheus}" --version 2>&1 | head -1)" \
		"$($GO version -m "$prometheus_bin" 2>/dev/null | awk '$1 == "mod" {print $2 "@" $3}')" | tee -a "$OUT/env.txt"
	env "${servers_env[@]}" BRAGERONE_BENCH_PROMETHEUS="$prometheus_bin" BRAGERONE_BENCH_PROMETHEUS_SECONDS="${PROMETHEUS_SECONDS:-90}" \
		BRAGERONE_BENCH_PROMETHEUS_INTERVAL="${PROMETHEUS_INTERVAL:-5s}" \
		$GO test -run '^$' -bench '^BenchmarkPrometheusScrape$' -benchtime 1x -count 1 -timeout 30m ./serving/ |
		tee "$OUT/prometheus.txt" >&2
fi

# med FILE BENCH-REGEX UNIT: median of UNIT over the lines of BENCH.
# A step that was not run leaves its figures as "-".
med() {
	[ -f "$OUT/$1.txt" ] || { echo "-"; return; }
	awk -v re="$2" -v unit="$3" '
		$1 ~ re { for (i = 3; i < NF; i++) if ($(i+1) == unit) v[n++] = $i }
		END {
			if (n == 0) { print "-"; exit }
			for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
			m = (n % 2) ? v[(n-1)/2] : (v[n/2-1] + v[n/2]) / 2
			printf "%.4g", m
		}' "$OUT/$1.txt"
}
# share FILE SIDE: the side's percentage of CPU samples in a tags report.
share() { [ -f "$OUT/$1.tags" ] || return 0; awk -v side="$2" '$NF == side":" || $NF == side { gsub(/[()%:]/, "", $2); print $2; exit }' "$OUT/$1.tags"; }
kv() { [ -f "$OUT/$1.txt" ] || { echo "-"; return; }; awk -F= -v k="$2" '$1 == k {print $2}' "$OUT/$1.txt"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", b / a; else print "-" }'; }

echo
echo "| figure | target | measured | same-run baseline | baseline ÷ measured |"
echo "|---|---|---|---|---|"
for n in 1000 10000 100000; do
	for enc in text text+gzip openmetrics openmetrics+gzip; do
		re="^BenchmarkScrape/series=$n/${enc//+/\\+}/"
		c=$(med scrape "${re}collector-2\$" ns/series)
		l=$(med scrape "${re}collector-labelorder-2\$" ns/series)
		bl=$(med scrape "${re}baseline-2\$" ns/series)
		ca=$(awk -v a="$(med scrape "${re}collector-2\$" allocs/op)" -v n="$n" 'BEGIN {printf "%.2f", a / n}')
		ba=$(awk -v a="$(med scrape "${re}baseline-2\$" allocs/op)" -v n="$n" 'BEGIN {printf "%.2f", a / n}')
		bf=$(med scrape_before "${re}collector-2\$" ns/series)
		echo "| scrape $n series, $enc: ns/series (allocs/series) | ≤ 200 at 100k text | $c ($ca); label order: $l; before: $bf | $bl ($ba) | $(ratio "$c" "$bl"); label order $(ratio "$l" "$bl"); before $(ratio "$bf" "$bl") |"
	done
done
for n in 1000 10000 100000; do
	for enc in text text+gzip openmetrics openmetrics+gzip openmetrics+zstd prometheus prometheus3; do
		re="^BenchmarkHTTPScrape/series=$n/${enc//+/\\+}/"
		c=$(med http "${re}exporter-2\$" ns/series)
		bf=$(med http "${re}before-2\$" ns/series)
		bl=$(med http "${re}baseline-2\$" ns/series)
		echo "| HTTP GET $n series, $enc: ns/series (wire B/series) | - | $c ($(med http "${re}exporter-2\$" wire-B/series)); before: $bf ($(med http "${re}before-2\$" wire-B/series)) | $bl ($(med http "${re}baseline-2\$" wire-B/series)) | $(ratio "$c" "$bl"); before $(ratio "$bf" "$bl") |"
	done
done
for z in stdlib-gzip-6 stdlib-gzip-1 stdlib-gzip-huffman klauspost-gzip-1 klauspost-gzip-2 klauspost-gzip-3 klauspost-gzip-5 klauspost-gzip-6 \
	klauspost-gzip-stateless klauspost-gzip-huffman zstd-fastest-pooled zstd-fastest-promhttp; do
	re="^BenchmarkCompress/series=100000/$z-2\$"
	echo "| compress a 100k-series OpenMetrics answer, $z: ns/series, compressed B/series (ratio), B allocated per body | - | $(med compress "$re" ns/series), $(med compress "$re" zB/series) ($(med compress "$re" ratio)), $(med compress "$re" B/op) | - | - |"
done
pm() { med prometheus '^BenchmarkPrometheusScrape-2$' "$1"; }
echo "| Prometheus ($(sed -n 's/^# prometheus: //p' "$OUT/env.txt" | tail -1)) scraping 100k series with its default request: median scrape_duration_seconds ms (ns/series) | (b) ≤ 1.2× the floor | $(pm exporter-ms) ($(pm exporter-ns/series)) over $(pm exporter-scrapes) scrapes, $(ratio "$(pm floor-ms)" "$(pm exporter-ms)")× the floor; before: $(pm before-ms) ($(pm before-ns/series)), $(ratio "$(pm floor-ms)" "$(pm before-ms)")× the floor; floor (answer replayed: Prometheus's own share): $(pm floor-ms) ($(pm floor-ns/series)) | $(pm baseline-ms) ($(pm baseline-ns/series)) | $(ratio "$(pm exporter-ms)" "$(pm baseline-ms)"); before $(ratio "$(pm before-ms)" "$(pm baseline-ms)") |"
for v in 1 3 32; do
	d=$(med decode_store "^BenchmarkDecodeAndStore/values=$v/decode\\+store-2\$" ns/update)
	j=$(med decode_store "^BenchmarkDecodeAndStore/values=$v/encoding_json-2\$" ns/update)
	echo "| decode + store, $v value(s)/delta: ns/update | - | $d | $j (encoding/json generic decode only) | $(ratio "$d" "$j") |"
done
echo "| a 100k-series scrape (Prometheus's request): live heap at its highest MB, B allocated | - | $(med scrape_peak '^BenchmarkScrapePeak-2$' peak-live-MB), $(med scrape_peak '^BenchmarkScrapePeak-2$' B/op); before: $(med scrape_peak_before '^BenchmarkScrapePeak-2$' peak-live-MB), $(med scrape_peak_before '^BenchmarkScrapePeak-2$' B/op) | - | - |"
echo "| a 100-module prime stored: live heap at its highest MB (store once done), B allocated | - | module by module: $(med prime_peak '^BenchmarkPrimePeak/each-2$' peak-live-MB) ($(med prime_peak '^BenchmarkPrimePeak/each-2$' store-MB)), $(med prime_peak '^BenchmarkPrimePeak/each-2$' B/op) | decoded whole: $(med prime_peak '^BenchmarkPrimePeak/whole-2$' peak-live-MB) ($(med prime_peak '^BenchmarkPrimePeak/whole-2$' store-MB)), $(med prime_peak '^BenchmarkPrimePeak/whole-2$' B/op) | - |"
echo "| store: heap B/parameter (10 × 1000 simulator prime) | ≤ 300 | $(med decode_store '^BenchmarkStoreFootprint/store-2$' heap-B/param) | $(med decode_store '^BenchmarkStoreFootprint/encoding_json-2$' heap-B/param) (encoding/json tree) | - |"
for sub in setparam drift; do
	u=$(med "ingest_$sub" "^BenchmarkIngest/$sub-2\$" updates/s)
	e=$(med "ingest_$sub" "^BenchmarkIngest/$sub-2\$" events/s)
	cu=$(med "ingest_$sub" "^BenchmarkIngest/$sub-2\$" cpu-µs/update)
	ce=$(med "ingest_$sub" "^BenchmarkIngest/$sub-2\$" cpu-µs/event)
	te=$(med "ingest_transport-only_$sub" "^BenchmarkIngest/transport-only/$sub-2\$" events/s)
	tce=$(med "ingest_transport-only_$sub" "^BenchmarkIngest/transport-only/$sub-2\$" cpu-µs/event)
	cs=$(share "ingest_$sub" client)
	ss=$(share "ingest_$sub" server)
	clientu=$(awk -v c="$cu" -v s="$cs" 'BEGIN { if (s != "") printf "%.3g", c * s / 100; else print "-" }')
	echo "| ingest $sub: updates/s (events/s) | ≥ 150k updates/s | $u ($e) | transport only: $te events/s | - |"
	echo "| ingest $sub: process CPU µs/update (µs/event); client share | client CPU/update | $cu ($ce); client ${cs:-?}% server ${ss:-?}% of samples → client ≈ $clientu µs/update | transport only: $tce µs/event | - |"
done
for k in close_transport abort_transport; do
	echo "| recovery after $k: median / p95 ms (50 drops) | median ≤ 300 | $(med recovery "^BenchmarkRecovery/$k-2\$" median-ms) / $(med recovery "^BenchmarkRecovery/$k-2\$" p95-ms) | direct connect+bind+prime: $(med recovery '^BenchmarkRecovery/direct-2$' median-ms) / $(med recovery '^BenchmarkRecovery/direct-2$' p95-ms) | - |"
done
fp() { kv footprint "$1"; }
mib() { awk -v k="$1" 'BEGIN { if (k + 0 > 0) printf "%.1f", k / 1024; else print "-" }'; }
for size in $FOOTPRINT_SIZES; do
	if [ -n "$(fp "skipped.$size")" ]; then
		echo "| serve footprint, $size | - | skipped: $(fp "skipped.$size") | - | - |"
		continue
	fi
	fig() { echo "$(mib "$(fp "$1.$size.rss_anon_kb")") / $(mib "$(fp "$1.$size.rss_file_kb")") / $(mib "$(fp "$1.$size.hwm_kb")") MB, $(fp "$1.$size.live_heap_b_per_param") B/param"; }
	echo "| serve footprint, $size, after 5 scrapes: RssAnon / RssFile / VmHWM, live heap per stored parameter | ≤ 35 MB / - / ≤ 60 MB, ≤ 150 B at 100x1000; RssAnon ≤ 10 MB at 10x1000 | $(fig exporter); before: $(fig before) | naive client_golang exporter: $(fig naive) | - |"
	echo "| serve, $size, ${FOOTPRINT_SECONDS} s more: RssAnon / VmHWM MB, CPU % of a core | - | $(mib "$(fp "exporter.$size.rss_anon_end_kb")") / $(mib "$(fp "exporter.$size.hwm_end_kb")"), $(fp "exporter.$size.cpu_pct_of_core"); before: $(mib "$(fp "before.$size.rss_anon_end_kb")") / $(mib "$(fp "before.$size.hwm_end_kb")"), $(fp "before.$size.cpu_pct_of_core") | naive: $(mib "$(fp "naive.$size.rss_anon_end_kb")") / $(mib "$(fp "naive.$size.hwm_end_kb")"), $(fp "naive.$size.cpu_pct_of_core") | - |"
done

BENCHSTAT=$(command -v benchstat || true)
[ -z "$BENCHSTAT" ] && [ -x "$($GO env GOPATH)/bin/benchstat" ] && BENCHSTAT=$($GO env GOPATH)/bin/benchstat
if [ -n "$BENCHSTAT" ]; then
	echo
	echo "benchstat summaries: $OUT/*.benchstat"
	for f in scrape decode_store; do "$BENCHSTAT" "$OUT/$f.txt" >"$OUT/$f.benchstat" 2>&1 || true; done
fi
