package status

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/collector"
)

// account is a snapshot of objects × modules per object: every fifth
// object's session down, every seventh silent, one module in ten offline,
// and episodes finished objects × episodesPerObject, spread over the
// timeline's window.
func account(objects, modulesPerObject, episodesPerObject int) collector.Snapshot {
	s := collector.Snapshot{Now: t0, TokenExpiry: t0.Add(time.Hour)}
	for i := range objects {
		id := 10000 + i
		o := healthyObject(id, fmt.Sprintf("Installation %d", i))
		switch {
		case i%5 == 4:
			sessionDown(&o)
		case i%7 == 6:
			zombie(&o)
		}
		o.PrimeFailures = map[string]uint64{"bind": 0, "reconnect": 0, "zombie": uint64(i % 3)}
		s.Objects = append(s.Objects, o)
		for j := range modulesPerObject {
			m := onlineModule(fmt.Sprintf("DEV%05d%03d", i, j), id, fmt.Sprintf("Boiler %d/%d", i, j))
			m.Version, m.GatewayVersion, m.Title = "3.1.4", "V2.08", "Boiler room"
			if (i*modulesPerObject+j)%10 == 9 {
				m.Online = false
				m.Outage = collector.Outage{Down: true, DownSince: t0.Add(-10 * time.Minute), DownFor: 10 * time.Minute, Reason: "ws"}
			}
			s.Modules = append(s.Modules, m)
		}
		for k := range episodesPerObject {
			end := t0.Add(-time.Duration(k+1) * 6 * time.Hour / time.Duration(episodesPerObject+1))
			s.Episodes = append(s.Episodes, collector.Episode{Layer: collector.LayerCloud, ObjectID: id, Reason: "eio_close",
				ID: fmt.Sprintf("cloud-%08x", i*episodesPerObject+k), StartedAt: end.Add(-30 * time.Second), EndedAt: end, DownFor: 30 * time.Second})
		}
	}
	return s
}

// BenchmarkRenderStatus renders /status for the whole account of issue 21's
// scale (50 objects × 2 modules) beside one object with as many modules
// (100, the single-object path), each with 20 finished episodes per object.
func BenchmarkRenderStatus(b *testing.B) {
	for _, bc := range []struct {
		name                      string
		objects, modules, history int
	}{
		{"objects=50/modules=2", 50, 2, 20},
		{"objects=1/modules=100", 1, 100, 20},
		{"objects=50/modules=2/nohistory", 50, 2, 0},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := account(bc.objects, bc.modules, bc.history)
			b.ReportAllocs()
			var size int
			for b.Loop() {
				w := &countingWriter{}
				if err := Render(w, s, Options{}); err != nil {
					b.Fatal(err)
				}
				size = w.n
			}
			b.ReportMetric(float64(size), "page-bytes")
		})
	}
}

// BenchmarkRenderModule renders one module's page in an account of 50
// objects × 2 modules: the page finds its module and its object.
func BenchmarkRenderModule(b *testing.B) {
	s := account(50, 2, 20)
	devid := s.Modules[len(s.Modules)-1].Devid
	b.ReportAllocs()
	for b.Loop() {
		if found, err := RenderModule(io.Discard, s, nil, devid, Options{}); !found || err != nil {
			b.Fatal(found, err)
		}
	}
}

type countingWriter struct{ n int }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }
