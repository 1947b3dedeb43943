package status

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
	// tlMaxTitleLines bounds the hover text of a bar that stands for
	// several outages drawn over one another.
	tlMaxTitleLines = 8
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
	Object  string // the anchor of the object's section, "" when none or several
	X, W    float64
	Y       int
	Ongoing bool
	Title   string

	lane    int
	outages []outageText // every outage the bar stands for
}

// outageText is what a bar's hover text says of one outage; it is worded
// only for the outages a bar shows (a merged bar lists a few).
type outageText struct {
	layer, devid, object, reason string
	start, end                   time.Time
	d                            time.Duration
	ongoing                      bool
}

func (t outageText) String(loc *time.Location) string {
	return episodeTitle(t.layer, t.devid, t.object, t.reason, t.start, t.end, t.d, t.ongoing, loc)
}

var laneDefs = []struct{ name, label string }{
	{collector.LayerCloud, "cloud session"},
	{collector.LayerModule, "modules"},
	{collector.LayerLiveStale, "live push"},
}

func buildTimeline(s collector.Snapshot, objects objectNames, now time.Time, o Options) timeline {
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

	add := func(object string, t outageText) {
		layer, start, end := t.layer, t.start, t.end
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
			Layer: layer, Object: object, X: round1(x0), W: round1(w),
			Y:       tl.Lanes[i].Y + (tlLaneHeight-tlBarHeight)/2,
			Ongoing: t.ongoing, lane: i, outages: []outageText{t},
		})
	}

	for _, e := range s.Episodes {
		start, end, ok := episodeSpan(e)
		if !ok {
			continue
		}
		obj := objects.of(e.ObjectID)
		add(obj.anchor, outageText{layer: e.Layer, devid: e.Devid, object: obj.label, reason: e.Reason, start: start, end: end, d: end.Sub(start)})
	}

	for _, obj := range s.Objects {
		name := objects.of(obj.ID)
		if so := obj.Session.Outage; !obj.Session.Up && so.Down {
			add(name.anchor, outageText{layer: collector.LayerCloud, object: name.label, reason: so.Reason,
				start: outageStart(so, now), end: now, d: so.DownFor, ongoing: true})
		}
		if p := obj.Push; p.Known && !p.Healthy && obj.Session.Up && p.StaleFor > 0 {
			add(name.anchor, outageText{layer: collector.LayerLiveStale, object: name.label, reason: "live_stale",
				start: now.Add(-p.StaleFor), end: now, d: p.StaleFor, ongoing: true})
		}
	}
	for _, m := range s.Modules {
		if mo := m.Outage; mo.Down {
			name := objects.of(m.ObjectID)
			add(name.anchor, outageText{layer: collector.LayerModule, devid: m.Devid, object: name.label, reason: mo.Reason,
				start: outageStart(mo, now), end: now, d: mo.DownFor, ongoing: true})
		}
	}

	tl.Bars = mergeBars(tl.Bars, o.Location)
	for i := range tl.Bars {
		tl.Lanes[tl.Bars[i].lane].Bars++
	}
	tl.Ticks = ticks(from, now, o, x)
	return tl
}

// mergeBars draws outages that overlap on the plot of one lane as one bar:
// the plot cannot tell them apart (an outage of the whole cloud is one at
// each object at once), and one bar whose hover text lists them says more
// than a stack of which only the top one can be hovered. It also keeps the
// page small for an account of many objects.
func mergeBars(bars []bar, loc *time.Location) []bar {
	slices.SortStableFunc(bars, func(a, b bar) int {
		return cmp.Or(cmp.Compare(a.lane, b.lane), cmp.Compare(a.X, b.X))
	})
	var out []bar
	for _, b := range bars {
		if n := len(out); n > 0 && out[n-1].lane == b.lane && b.X <= out[n-1].X+out[n-1].W {
			last := &out[n-1]
			last.W = round1(max(last.X+last.W, b.X+b.W) - last.X)
			last.Ongoing = last.Ongoing || b.Ongoing
			if last.Object != b.Object {
				last.Object = ""
			}
			last.outages = append(last.outages, b.outages...)
			continue
		}
		out = append(out, b)
	}
	for i := range out {
		b := &out[i]
		if len(b.outages) == 1 {
			b.Title = b.outages[0].String(loc)
			continue
		}
		lines := []string{fmt.Sprintf("%d outages", len(b.outages))}
		for _, t := range b.outages[:min(len(b.outages), tlMaxTitleLines)] {
			lines = append(lines, t.String(loc))
		}
		b.Title = strings.Join(lines, "\n")
		if more := len(b.outages) - tlMaxTitleLines; more > 0 {
			b.Title += fmt.Sprintf("\n… and %d more", more)
		}
	}
	return out
}

// episodeSpan is when an episode began and ended, completing one from the
// other and its length.
func episodeSpan(e collector.Episode) (start, end time.Time, ok bool) {
	start, end = e.StartedAt, e.EndedAt
	if start.IsZero() && !end.IsZero() {
		start = end.Add(-e.DownFor)
	}
	if end.IsZero() && !start.IsZero() {
		end = start.Add(e.DownFor)
	}
	return start, end, !start.IsZero() && !end.Before(start)
}

// episodeObj is how an episode or a bar names its object, and the section
// it links to ("" when the object is not watched).
type episodeObj struct{ label, anchor string }

// objectNames are the names of the watched objects by ID, worded once per
// page however many outages name them.
type objectNames map[int]episodeObj

func namesOf(objects []collector.ObjectState) objectNames {
	names := make(objectNames, len(objects))
	for _, obj := range objects {
		if _, dup := names[obj.ID]; !dup {
			names[obj.ID] = episodeObj{objectLabel(obj), objectAnchor(obj.ID)}
		}
	}
	return names
}

func (n objectNames) of(id int) episodeObj {
	if name, ok := n[id]; ok {
		return name
	}
	if id == 0 {
		return episodeObj{}
	}
	// An object that has left the account since (or was never watched).
	return episodeObj{label: "object " + strconv.Itoa(id) + " (not watched)"}
}

func outageStart(o collector.Outage, now time.Time) time.Time {
	if !o.DownSince.IsZero() {
		return o.DownSince
	}
	return now.Add(-o.DownFor)
}

func episodeTitle(layer, devid, object, reason string, start, end time.Time, d time.Duration, ongoing bool, loc *time.Location) string {
	what := layer
	if devid != "" {
		what += " " + clean(devid, maxShown)
	}
	if object != "" {
		what += " · " + object
	}
	until := end.In(loc).Format("15:04:05")
	if ongoing {
		until = "now (ongoing)"
	}
	return fmt.Sprintf("%s · %s · %s → %s · %s", what, clean(reason, maxShown), start.In(loc).Format("15:04:05"), until, fmtDuration(d))
}

// maxEpisodeRows bounds the list of recent outages under the timeline; the
// ring of every object together may hold many more.
const maxEpisodeRows = 50

type episodeList struct {
	Rows []episodeRow
	More int // finished outages in the window not listed
}

type episodeRow struct {
	Ended, Layer, Module, Reason, For string
	Object, ObjectLink                string
}

// buildEpisodes lists the finished outages of the window, newest first,
// each naming its object and linking to its section.
func buildEpisodes(eps []collector.Episode, objects objectNames, now time.Time, o Options) episodeList {
	from := now.Add(-o.Window)
	type dated struct {
		e          collector.Episode
		start, end time.Time
	}
	var in []dated
	for _, e := range eps {
		start, end, ok := episodeSpan(e)
		if !ok || end.Before(from) || start.After(now) {
			continue
		}
		in = append(in, dated{e, start, end})
	}
	slices.SortFunc(in, func(a, b dated) int {
		return cmp.Or(b.end.Compare(a.end), cmp.Compare(a.e.ID, b.e.ID))
	})
	var l episodeList
	if len(in) > maxEpisodeRows {
		l.More = len(in) - maxEpisodeRows
		in = in[:maxEpisodeRows]
	}
	for _, d := range in {
		obj := objects.of(d.e.ObjectID)
		row := episodeRow{
			Ended:  fmtTime(d.end, o.Location),
			Layer:  clean(d.e.Layer, maxShown),
			Module: clean(d.e.Devid, maxShown),
			Reason: clean(d.e.Reason, maxShown),
			For:    fmtDuration(d.end.Sub(d.start)),
			Object: obj.label,
		}
		if obj.anchor != "" {
			row.ObjectLink = "#" + obj.anchor
		}
		l.Rows = append(l.Rows, row)
	}
	return l
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
