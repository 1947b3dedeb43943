package collector_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/serving"
	"github.com/bragerone/bragerone_exporter/wire"
)

// servedStore serves /metrics over a real store exactly as serve wires it:
// the store in exposition order behind the collector's own handler, with
// the per-module numbers read from the store at scrape time.
type servedStore struct {
	t     *testing.T
	store *store.Store
	srv   *httptest.Server
}

func serveStore(t *testing.T, st *store.Store, devids []string, opts collector.Options) *servedStore {
	t.Helper()
	snap := func() collector.Snapshot {
		s := collector.Snapshot{Now: time.Now(), Objects: []collector.ObjectState{{ID: 1, Session: collector.SessionState{Up: true}}}}
		stats := st.Stats()
		for _, d := range devids {
			ps := stats[d]
			s.Modules = append(s.Modules, collector.ModuleState{
				Devid: d, ObjectID: 1, Params: ps.Params, NonNumeric: ps.NonNumeric, LastUpdate: ps.LastUpdate, Refused: ps.Refused,
			})
		}
		return s
	}
	col, err := collector.New(collector.SnapshotFunc(snap), collector.ParamSourceFunc(st.ForEachParamInLabelOrder), opts)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	srv := httptest.NewServer(serving.NewHandler(reg, col, promhttp.HandlerOpts{Registry: reg}))
	t.Cleanup(srv.Close)
	return &servedStore{t: t, store: st, srv: srv}
}

// scrape fetches /metrics as text and returns every sample of name, keyed
// by its labels ("devid=D1,param=v1,pool=P4"), and the body's size.
func (s *servedStore) scrape(name string) (map[string]float64, int) {
	s.t.Helper()
	resp, err := http.Get(s.srv.URL)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		s.t.Fatalf("scrape: %d %v", resp.StatusCode, err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		s.t.Fatalf("scrape does not parse: %v", err)
	}
	out := map[string]float64{}
	if mf := fams[name]; mf != nil {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, lp := range m.GetLabel() {
				labels = append(labels, lp.GetName()+"="+lp.GetValue())
			}
			v := m.GetGauge().GetValue()
			if m.GetCounter() != nil {
				v = m.GetCounter().GetValue()
			}
			out[strings.Join(labels, ",")] = v
		}
	}
	return out, len(body)
}

func val(devid, pool string, ch byte, idx int, v float64) wire.ParamUpdate {
	return wire.ParamUpdate{Devid: devid, Pool: pool, Chan: ch, Idx: idx, Value: v, HasValue: true}
}

// A parameter the cloud stops reporting stops being exported: the next
// prime of its module lacks it, the store drops it, the scrape no longer
// shows it. A parameter written live after that prime was requested stays.
func TestParameterTheCloudStopsReportingLeavesTheScrape(t *testing.T) {
	st := store.New()
	s := serveStore(t, st, []string{"D1", "D2"}, collector.Options{})
	st.ApplyPrime(st.BeginPrime(), []wire.ParamUpdate{
		val("D1", "P4", 'v', 1, 21.5), val("D1", "P4", 'v', 2, 7), val("D1", "P5", 'v', 3, 1),
		val("D2", "P4", 'v', 1, 19),
	}, time.Now())
	got, _ := s.scrape("bragerone_parameter_value")
	if len(got) != 4 || got["devid=D1,param=v2,pool=P4"] != 7 {
		t.Fatalf("first scrape = %v", got)
	}

	// Event 22 for D1: its prime no longer carries P4.v2; meanwhile a live
	// update brings P5.v3 and a new P6.v4 after the prime was requested.
	mark := st.BeginPrime()
	st.ApplyLive([]wire.ParamUpdate{val("D1", "P5", 'v', 3, 2), val("D1", "P6", 'v', 4, 4)}, store.SourceLive, time.Now())
	st.ApplyPrime(mark, []wire.ParamUpdate{val("D1", "P4", 'v', 1, 22)}, time.Now())

	got, _ = s.scrape("bragerone_parameter_value")
	want := map[string]float64{
		"devid=D1,param=v1,pool=P4": 22,
		"devid=D1,param=v3,pool=P5": 2, // live, newer than the prime
		"devid=D1,param=v4,pool=P6": 4, // live, newer than the prime
		"devid=D2,param=v1,pool=P4": 19,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the prime: exported %v, want %v", got, want)
	}
	if n, _ := s.scrape("bragerone_parameters"); n["devid=D1"] != 3 {
		t.Fatalf("bragerone_parameters = %v, want 3 for D1", n)
	}
}

// One pushed event with 100,000 parameter keys for a module: the store keeps
// its bound, the scrape exports at most the default series cap for the
// module, the rest is counted, and the other module is untouched.
func TestHostilePushIsBoundedInTheScrape(t *testing.T) {
	st := store.New()
	s := serveStore(t, st, []string{"D1", "D2"}, collector.Options{MaxSeries: collector.DefaultMaxSeriesPerModule})
	st.ApplyPrime(st.BeginPrime(), []wire.ParamUpdate{val("D2", "P4", 'v', 1, 19)}, time.Now())

	const hostile = 100_000
	var b strings.Builder
	b.WriteString(`{"D1":{"P9":{`)
	for i := range hostile {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"v%d":{"value":%d}`, i, i)
	}
	b.WriteString(`}}}`)
	ups, err := wire.DecodeParameters([]byte(b.String()))
	if err != nil || len(ups) != hostile {
		t.Fatalf("decoded %d updates, err %v", len(ups), err)
	}
	st.ApplyLive(ups, store.SourceLive, time.Now())

	stats := st.Stats()["D1"]
	if stats.Params != store.DefaultMaxKeysPerModule || stats.Refused != hostile-store.DefaultMaxKeysPerModule {
		t.Fatalf("store holds %d keys of D1 and refused %d; want %d and %d", stats.Params, stats.Refused,
			store.DefaultMaxKeysPerModule, hostile-store.DefaultMaxKeysPerModule)
	}
	series, size := s.scrape("bragerone_parameter_value")
	perModule := map[string]int{}
	for k := range series {
		perModule[strings.SplitN(k, ",", 2)[0]]++
	}
	if perModule["devid=D1"] != collector.DefaultMaxSeriesPerModule || perModule["devid=D2"] != 1 {
		t.Fatalf("series per module = %v, want %d for D1 and 1 for D2", perModule, collector.DefaultMaxSeriesPerModule)
	}
	if size > 1<<20 {
		t.Fatalf("a scrape is %d bytes", size)
	}
	dropped, _ := s.scrape("bragerone_parameter_series_dropped")
	if dropped["devid=D1"] != store.DefaultMaxKeysPerModule-collector.DefaultMaxSeriesPerModule || dropped["devid=D2"] != 0 {
		t.Fatalf("dropped = %v", dropped)
	}
	refused, _ := s.scrape("bragerone_parameter_updates_refused_total")
	if refused["devid=D1"] != hostile-store.DefaultMaxKeysPerModule {
		t.Fatalf("refused = %v", refused)
	}

	// The next prime of D1 is the truth: the invented keys leave.
	st.ApplyPrime(st.BeginPrime(), []wire.ParamUpdate{val("D1", "P4", 'v', 1, 21.5)}, time.Now())
	if series, _ := s.scrape("bragerone_parameter_value"); len(series) != 2 {
		t.Fatalf("after D1's prime %d series are exported, want 2", len(series))
	}
}
