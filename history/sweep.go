package history

import "time"

// DefaultMaxPages bounds the pages one read of a list fetches; a sweep
// that needs more continues with the next read.
const DefaultMaxPages = 5

// Sweep decides how far the reads of one list page: from the first page
// until a page reaches rows older than the horizon the sweep began with, a
// page is short (the list's end), or a page brings nothing fresh (the cloud
// repeats a page). A read stops after MaxPages pages; the next read then
// continues the same sweep (same horizon) at the page after: rows only move
// down the list as new ones arrive, so it reads some rows again and skips
// none. Zero MaxPages takes DefaultMaxPages.
type Sweep struct {
	MaxPages int
	horizon  time.Time
	pending  int // the page a continued sweep reads next; 0 when none
}

// Begin starts a read: it returns the page to read first. A new sweep takes
// horizon; a continued one keeps its own.
func (s *Sweep) Begin(horizon time.Time) int {
	if s.pending > 0 {
		return s.pending
	}
	s.horizon = horizon
	return 1
}

// Horizon is the horizon of the sweep under way.
func (s *Sweep) Horizon() time.Time { return s.horizon }

// Next is told of the page just read (its number, how many pages this read
// has read, whether it was full, and what its rows told the trackers) and
// says whether to read the next page now, and whether the sweep is done.
func (s *Sweep) Next(page, read int, full bool, r PageResult) (more, done bool) {
	maxPages := s.MaxPages
	if maxPages <= 0 {
		maxPages = DefaultMaxPages
	}
	if !full || !r.Fresh || (!r.Oldest.IsZero() && r.Oldest.Before(s.horizon)) {
		s.pending = 0
		return false, true
	}
	if read >= maxPages {
		s.pending = page + 1
		return false, false
	}
	return true, false
}

// Failed records that reading page failed: the next read retries it.
func (s *Sweep) Failed(page int) {
	if page > 1 {
		s.pending = page
	}
}
