package history

import (
	"testing"
	"time"
)

func TestSweep(t *testing.T) {
	h := at(time.Hour)
	fresh := func(oldest time.Time) PageResult { return PageResult{Oldest: oldest, Fresh: true} }
	type page struct {
		full bool
		res  PageResult
	}
	cases := []struct {
		name      string
		pages     []page
		wantRead  int  // pages read by the first read
		wantDone  bool // the sweep finished in it
		nextBegin int  // the page the next read begins at
	}{
		{"short page ends it", []page{{false, fresh(at(2 * time.Hour))}}, 1, true, 1},
		{"reaching the horizon ends it", []page{{true, fresh(at(2 * time.Hour))}, {true, fresh(at(59 * time.Minute))}}, 2, true, 1},
		{"a row at the horizon reads one more", []page{{true, fresh(h)}, {true, fresh(at(30 * time.Minute))}}, 2, true, 1},
		{"a repeated page ends it", []page{{true, fresh(at(3 * time.Hour))}, {true, PageResult{}}}, 2, true, 1},
		{"a page of bad rows goes on", []page{{true, PageResult{Fresh: true}}, {false, PageResult{}}}, 2, true, 1},
		{"the page budget continues next read", []page{
			{true, fresh(at(9 * time.Hour))}, {true, fresh(at(8 * time.Hour))}, {true, fresh(at(7 * time.Hour))},
			{true, fresh(at(6 * time.Hour))}, {true, fresh(at(5 * time.Hour))}, {true, fresh(at(4 * time.Hour))},
		}, 5, false, 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var s Sweep
			page := s.Begin(h)
			read, done := 0, false
			for _, p := range c.pages {
				read++
				var more bool
				more, done = s.Next(page, read, p.full, p.res)
				if !more {
					break
				}
				page++
			}
			if read != c.wantRead || done != c.wantDone {
				t.Fatalf("read %d pages, done %v; want %d, %v", read, done, c.wantRead, c.wantDone)
			}
			if got := s.Begin(at(10 * time.Hour)); got != c.nextBegin {
				t.Fatalf("next read begins at page %d, want %d", got, c.nextBegin)
			}
			if c.nextBegin > 1 && !s.Horizon().Equal(h) {
				t.Fatalf("a continued sweep took a new horizon %v", s.Horizon())
			}
		})
	}
}

func TestSweepFailedPageIsRetried(t *testing.T) {
	s := Sweep{MaxPages: 2}
	s.Begin(t0)
	s.Next(1, 1, true, PageResult{Oldest: at(time.Hour), Fresh: true})
	s.Failed(2)
	if got := s.Begin(at(time.Hour)); got != 2 {
		t.Fatalf("after page 2 failed the next read begins at %d", got)
	}
	var fresh Sweep
	fresh.Failed(1)
	if got := fresh.Begin(t0); got != 1 {
		t.Fatalf("a failed first page: next read begins at %d", got)
	}
}
