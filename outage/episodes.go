package outage

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"time"
)

// Layer names which signal an episode belongs to.
type Layer string

// Episode layers (docs/spec.md W-4.4d).
const (
	LayerCloud     Layer = "cloud"
	LayerModule    Layer = "module"
	LayerLiveStale Layer = "live_stale"
)

// DefaultEpisodeLimit is the ring size of connectivity_episode_limit.
const DefaultEpisodeLimit = 20

// Episode is one finished outage of any layer.
type Episode struct {
	// ID is "<layer>-<8 hex>", derived from the episode's content and its
	// sequence number, so the same history always yields the same IDs.
	ID        string
	Layer     Layer
	StartedAt time.Time
	EndedAt   time.Time
	DownFor   time.Duration
	Reason    string
	// Devid is set for module episodes only.
	Devid string
}

// Episodes is a bounded ring of the most recent episodes. A nil *Episodes
// or one with limit 0 records nothing, so the machines can share one ring or
// none.
type Episodes struct {
	limit int
	buf   []Episode // oldest first
	seq   uint64
}

// NewEpisodes returns a ring keeping the newest limit episodes; limit ≤ 0
// disables recording.
func NewEpisodes(limit int) *Episodes {
	if limit < 0 {
		limit = 0
	}
	return &Episodes{limit: limit}
}

// Add records ep (its ID is assigned here) and returns the stored copy.
func (e *Episodes) Add(ep Episode) Episode {
	var seq uint64
	if e != nil {
		e.seq++
		seq = e.seq
	}
	ep.ID = episodeID(ep, seq)
	if e == nil || e.limit == 0 {
		return ep
	}
	if len(e.buf) == e.limit {
		copy(e.buf, e.buf[1:])
		e.buf = e.buf[:len(e.buf)-1]
	}
	e.buf = append(e.buf, ep)
	return ep
}

// Snapshot returns a copy of the stored episodes, oldest first.
func (e *Episodes) Snapshot() []Episode {
	if e == nil {
		return nil
	}
	return append([]Episode(nil), e.buf...)
}

// Total is the number of episodes ever added, including those that fell
// out of the ring or were not stored because the ring is disabled.
func (e *Episodes) Total() uint64 {
	if e == nil {
		return 0
	}
	return e.seq
}

func episodeID(ep Episode, seq uint64) string {
	h := fnv.New32a()
	var b [8]byte
	write := func(s string) { h.Write([]byte(s)); h.Write([]byte{0}) }
	writeInt := func(v int64) { binary.BigEndian.PutUint64(b[:], uint64(v)); h.Write(b[:]) }
	write(string(ep.Layer))
	write(ep.Devid)
	write(ep.Reason)
	writeInt(ep.StartedAt.UnixNano())
	writeInt(ep.EndedAt.UnixNano())
	writeInt(int64(ep.DownFor))
	writeInt(int64(seq))
	return fmt.Sprintf("%s-%08x", ep.Layer, h.Sum32())
}
