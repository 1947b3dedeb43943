package status

import (
	"fmt"
	"time"

	"github.com/bragerone/bragerone_exporter/collector"
)

// Timeline geometry, in SVG user units (the SVG scales to the page width).
const (
	tlWidth      = 960
	tlLabelWidth = 110
	tlRight      = 24
	tlTop        = 22
	tlLaneHeight = 30
	tlBarHeight  = 18
	tlMinBar     = 2 // a blink of a second still shows
)

type timeline struct {
	Width, Height int
	PlotLeft      int
	PlotRight     int
	Lanes         []lane
	Ticks         []tick
	Bars          []bar
	From, To      string
	Window        string
}

type lane struct {
	Name, Label string
	Y, TextY    int // lane top, label baseline
	Bars        int // bars drawn in the lane
}

type tick struct {
	X     float64
	Label string
}

type bar struct {
	Layer   string
	X, W    float64
	Y       int
	Ongoing bool
	Title   string
}

var laneDefs = []struct{ name, label string }{
	{collector.LayerCloud, "cloud session"},
	{collector.LayerModule, "modules"},
	{collector.LayerLiveStale, "live push"},
}

func buildTimeline(s collector.Snapshot, now time.Time, o Options) timeline {
	from := now.Add(-o.Window)
	tl := timeline{
		Width:     tlWidth,
		Height:    tlTop + len(laneDefs)*tlLaneHeight + 4,
		PlotLeft:  tlLabelWidth,
		PlotRight: tlWidth - tlRight,
		From:      fmtTime(from, o.Location),
		To:        fmtTime(now, o.Location),
		Window:    fmtDuration(o.Window),
	}
	laneIndex := map[string]int{}
	for i, d := range laneDefs {
		y := tlTop + i*tlLaneHeight
		tl.Lanes = append(tl.Lanes, lane{Name: d.name, Label: d.label, Y: y, TextY: y + tlLaneHeight/2 + 5})
		laneIndex[d.name] = i
	}
	plot := float64(tl.PlotRight - tl.PlotLeft)
	x := func(t time.Time) float64 {
		return float64(tl.PlotLeft) + float64(t.Sub(from))/float64(o.Window)*plot
	}

	add := func(layer string, start, end time.Time, ongoing bool, title string) {
		i, ok := laneIndex[layer]
		if !ok || end.Before(from) || start.After(now) {
			return
		}
		if start.Before(from) {
			start = from
		}
		if end.After(now) {
			end = now
		}
		x0, x1 := x(start), x(end)
		w := max(x1-x0, tlMinBar)
		if x0+w > float64(tl.PlotRight) {
			x0 = float64(tl.PlotRight) - w
		}
		tl.Bars = append(tl.Bars, bar{
			Layer: layer, X: round1(x0), W: round1(w),
			Y:       tl.Lanes[i].Y + (tlLaneHeight-tlBarHeight)/2,
			Ongoing: ongoing, Title: title,
		})
		tl.Lanes[i].Bars++
	}

	for _, e := range s.Episodes {
		start, end := e.StartedAt, e.EndedAt
		if start.IsZero() && !end.IsZero() {
			start = end.Add(-e.DownFor)
		}
		if end.IsZero() && !start.IsZero() {
			end = start.Add(e.DownFor)
		}
		if start.IsZero() || end.Before(start) {
			continue
		}
		add(e.Layer, start, end, false, episodeTitle(e.Layer, e.Devid, e.Reason, start, end, end.Sub(start), false, o.Location))
	}

	if so := s.Session.Outage; !s.Session.Up && so.Down {
		start := outageStart(so, now)
		add(collector.LayerCloud, start, now, true, episodeTitle(collector.LayerCloud, "", so.Reason, start, now, so.DownFor, true, o.Location))
	}
	for _, m := range s.Modules {
		if mo := m.Outage; mo.Down {
			start := outageStart(mo, now)
			add(collector.LayerModule, start, now, true, episodeTitle(collector.LayerModule, m.Devid, mo.Reason, start, now, mo.DownFor, true, o.Location))
		}
	}
	if s.Push.Known && !s.Push.Healthy && s.Session.Up && s.Push.StaleFor > 0 {
		start := now.Add(-s.Push.StaleFor)
		add(collector.LayerLiveStale, start, now, true, episodeTitle(collector.LayerLiveStale, "", "live_stale", start, now, s.Push.StaleFor, true, o.Location))
	}

	tl.Ticks = ticks(from, now, o, x)
	return tl
}

func outageStart(o collector.Outage, now time.Time) time.Time {
	if !o.DownSince.IsZero() {
		return o.DownSince
	}
	return now.Add(-o.DownFor)
}

func episodeTitle(layer, devid, reason string, start, end time.Time, d time.Duration, ongoing bool, loc *time.Location) string {
	what := layer
	if devid != "" {
		what += " " + clean(devid, maxShown)
	}
	until := end.In(loc).Format("15:04:05")
	if ongoing {
		until = "now (ongoing)"
	}
	return fmt.Sprintf("%s · %s · %s → %s · %s", what, clean(reason, maxShown), start.In(loc).Format("15:04:05"), until, fmtDuration(d))
}

// ticks places time labels at round steps across the window.
func ticks(from, now time.Time, o Options, x func(time.Time) float64) []tick {
	var step time.Duration
	switch {
	case o.Window <= 90*time.Minute:
		step = 15 * time.Minute
	case o.Window <= 3*time.Hour:
		step = 30 * time.Minute
	case o.Window <= 12*time.Hour:
		step = time.Hour
	case o.Window <= 48*time.Hour:
		step = 6 * time.Hour
	default:
		step = 24 * time.Hour
	}
	var out []tick
	for t := from.Truncate(step).Add(step); !t.After(now); t = t.Add(step) {
		label := t.In(o.Location).Format("15:04")
		if step >= 24*time.Hour {
			label = t.In(o.Location).Format("01-02")
		}
		out = append(out, tick{X: round1(x(t)), Label: label})
	}
	return out
}

func round1(f float64) float64 {
	return float64(int64(f*10+0.5)) / 10
}
