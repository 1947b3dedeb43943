package outage

import (
	"regexp"
	"testing"
)

func TestEpisodesRingKeepsNewestLimit(t *testing.T) {
	e := NewEpisodes(3)
	for i := 0; i < 5; i++ {
		e.Add(Episode{Layer: LayerCloud, StartedAt: at(float64(i)), EndedAt: at(float64(i) + 1), DownFor: secs(1), Reason: ReasonEIOClose})
	}
	got := e.Snapshot()
	if len(got) != 3 || !got[0].StartedAt.Equal(at(2)) || !got[2].StartedAt.Equal(at(4)) {
		t.Fatalf("ring: %+v", got)
	}
	if e.Total() != 5 {
		t.Fatalf("total %d", e.Total())
	}
}

func TestEpisodesDefaultLimitIs20(t *testing.T) {
	e := NewEpisodes(DefaultEpisodeLimit)
	for i := 0; i < 25; i++ {
		e.Add(Episode{Layer: LayerModule, Devid: "A", StartedAt: at(float64(i))})
	}
	if n := len(e.Snapshot()); n != 20 {
		t.Fatalf("kept %d, want 20", n)
	}
}

func TestEpisodesLimitZeroDisabled(t *testing.T) {
	for _, e := range []*Episodes{NewEpisodes(0), NewEpisodes(-1), nil} {
		ep := e.Add(Episode{Layer: LayerCloud})
		if len(e.Snapshot()) != 0 {
			t.Fatal("disabled ring must store nothing")
		}
		if ep.ID == "" {
			t.Fatal("the returned episode still carries an ID")
		}
	}
}

func TestEpisodeIDFormatDeterministicUnique(t *testing.T) {
	re := regexp.MustCompile(`^(cloud|module|live_stale)-[0-9a-f]{8}$`)
	build := func() []Episode {
		e := NewEpisodes(10)
		e.Add(Episode{Layer: LayerCloud, StartedAt: at(0), EndedAt: at(5), DownFor: secs(5), Reason: ReasonEIOClose})
		e.Add(Episode{Layer: LayerModule, Devid: "A", StartedAt: at(0), EndedAt: at(5), DownFor: secs(5), Reason: SourceWS})
		e.Add(Episode{Layer: LayerLiveStale, StartedAt: at(0), EndedAt: at(500), DownFor: secs(500), Reason: ReasonLiveStale})
		e.Add(Episode{Layer: LayerCloud, StartedAt: at(0), EndedAt: at(5), DownFor: secs(5), Reason: ReasonEIOClose})
		return e.Snapshot()
	}
	a, b := build(), build()
	seen := map[string]bool{}
	for i := range a {
		if !re.MatchString(a[i].ID) {
			t.Fatalf("id %q", a[i].ID)
		}
		if a[i].ID != b[i].ID {
			t.Fatalf("ids differ between identical histories: %q %q", a[i].ID, b[i].ID)
		}
		if seen[a[i].ID] {
			t.Fatalf("duplicate id %q", a[i].ID)
		}
		seen[a[i].ID] = true
	}
}

func TestEpisodesSnapshotIsACopy(t *testing.T) {
	e := NewEpisodes(2)
	e.Add(Episode{Layer: LayerCloud, Reason: ReasonStop})
	s := e.Snapshot()
	s[0].Reason = "x"
	if e.Snapshot()[0].Reason != ReasonStop {
		t.Fatal("snapshot aliases the ring")
	}
}
