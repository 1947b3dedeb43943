package metricref

import (
	"reflect"
	"strings"
	"testing"
)

func TestInExpr(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`up{job=~".*bragerone.*"} == 0`, []string{"up"}},
		{`absent(up{job=~".*bragerone.*"})`, []string{"up"}},
		{`sum without (endpoint, code) (rate(bragerone_http_requests_total{code=~"5.."}[5m]))`,
			[]string{"bragerone_http_requests_total"}},
		{`instance:bragerone_http_requests_5xx:rate5m / instance:bragerone_http_requests:rate5m`,
			[]string{"instance:bragerone_http_requests_5xx:rate5m", "instance:bragerone_http_requests:rate5m"}},
		{`histogram_quantile(0.95, sum by (le, endpoint) (rate(bragerone_http_request_duration_seconds_bucket{job=~"$job",instance=~"$instance"}[$__rate_interval])))`,
			[]string{"bragerone_http_request_duration_seconds_bucket"}},
		{`bragerone_push_healthy == 0 and on (job, instance) bragerone_session_up == 1`,
			[]string{"bragerone_push_healthy", "bragerone_session_up"}},
		{`(time() - bragerone_module_last_update_timestamp_seconds) > 3600 and on(job, instance, devid) bragerone_module_online == 1`,
			[]string{"bragerone_module_last_update_timestamp_seconds", "bragerone_module_online"}},
		{`label_values(bragerone_parameter_value{job=~"$job", devid=~"${devid}"}, param)`,
			[]string{"bragerone_parameter_value"}},
		{`sum(bragerone_module_online) by (up, bragerone_x) + bragerone_module_online offset 5m`,
			[]string{"bragerone_module_online"}},
		{`max_over_time(bragerone_session_up[3m:30s]) # bragerone_in_comment`, []string{"bragerone_session_up"}},
		{`label_replace(bragerone_module_info, "x", "bragerone_in_string", "devid", "(.*)")`, []string{"bragerone_module_info"}},
		{`node_load1 + 1e3 + 0.5`, nil},
		{`bragerone_unterminated{job="x`, []string{"bragerone_unterminated"}},
	} {
		if got := InExpr(tc.expr); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("InExpr(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

func TestContract(t *testing.T) {
	md := "# Metrics\n\ntext | with a pipe\n\n| metric | type | labels | meaning |\n|---|---|---|---|\n" +
		"| `bragerone_a` | gauge | devid | a |\n" +
		"| `bragerone_b_total` | counter | | b |\n" +
		"| `bragerone_c_seconds` | histogram | endpoint | c |\n" +
		"\nMore text.\n\n| question | PromQL |\n|---|---|\n| Which? | `up` |\n" +
		"\n| metric | type | labels |\n|---|---|---|\n| `bragerone_late` | gauge | |\n"
	got, err := Contract([]byte(md))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"bragerone_a": true, "bragerone_b_total": true, "bragerone_c_seconds_bucket": true,
		"bragerone_c_seconds_sum": true, "bragerone_c_seconds_count": true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Contract = %v, want %v", got, want)
	}

	for _, bad := range []string{
		"no table here\n",
		"| metric | type |x|\n|---|---|---|\n| `bragerone_a` | gauge | |\n| `bragerone_b` | gage | |\n",
		"| metric | type |x|\n|---|---|---|\n| `node_a` | gauge | |\n",
		"| question | PromQL |\n|---|---|\n| Which? | `up` |\n",
	} {
		if _, err := Contract([]byte(bad)); err == nil {
			t.Errorf("Contract(%q): no error", bad)
		} else if !strings.Contains(err.Error(), "METRICS.md") {
			t.Errorf("Contract(%q): error %q does not name the file", bad, err)
		}
	}
}

func TestContractLabels(t *testing.T) {
	md := "| metric | type | labels | meaning |\n|---|---|---|---|\n" +
		"| `bragerone_a` | gauge | object_id, devid | a |\n" +
		"| `bragerone_b_total` | counter | | b |\n" +
		"| `bragerone_c_seconds` | histogram | endpoint | c |\n"
	got, err := ContractLabels([]byte(md))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"bragerone_a": {"object_id", "devid"}, "bragerone_b_total": nil,
		"bragerone_c_seconds_bucket": {"endpoint"}, "bragerone_c_seconds_sum": {"endpoint"}, "bragerone_c_seconds_count": {"endpoint"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ContractLabels = %q, want %q", got, want)
	}
	if _, err := ContractLabels([]byte("| metric | type | meaning |\n|---|---|---|\n| `bragerone_a` | gauge | a |\n")); err == nil ||
		!strings.Contains(err.Error(), "labels column") {
		t.Errorf("a table without a labels column: error %v", err)
	}
}
