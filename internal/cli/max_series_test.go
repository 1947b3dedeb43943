package cli

import (
	"testing"

	"github.com/bragerone/bragerone_exporter/collector"
)

// serve caps parameter series per module by default: the flag's default is
// the collector's DefaultMaxSeriesPerModule (the struct tag cannot name the
// constant, so this keeps the two one fact).
func TestMaxSeriesDefaultIsPerModuleCap(t *testing.T) {
	cli, err := parseForTest(t)
	if err != nil {
		t.Fatal(err)
	}
	if got := cli.Serve.ParametersMaxSeries; got != collector.DefaultMaxSeriesPerModule || got <= 0 {
		t.Fatalf("--parameters.max-series defaults to %d, want collector.DefaultMaxSeriesPerModule (%d)", got, collector.DefaultMaxSeriesPerModule)
	}
}
