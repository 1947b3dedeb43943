package store

import "time"

// StaleValueAfter is the documented bound of a value's age: a value that
// arrived (in a prime or a live update) longer ago than this is stale
// unless its object's live stream vouches for it (session up, live push
// healthy: a healthy stream carries every change, so an unchanged value is
// current whatever its age). A value of a module that is offline is stale
// at any age. The status page, the tools and the README use this one bound.
const StaleValueAfter = 10 * time.Minute

// Stale reports whether a value that arrived at updated is stale at now:
// its module is offline, or it is older than StaleValueAfter and its
// object's live stream does not vouch for it (streamHealthy false).
func Stale(updated, now time.Time, moduleOffline, streamHealthy bool) bool {
	if moduleOffline {
		return true
	}
	return !streamHealthy && now.Sub(updated) > StaleValueAfter
}

// UpdatedAt reads when each stored register of a module last received a
// value (prime or live); ok is false when the register is not stored or
// has no time.
func (s *Store) UpdatedAt(devid string) func(pool, chanIdx string) (time.Time, bool) {
	return func(pool, chanIdx string) (time.Time, bool) {
		k, ok := readerKey(pool, chanIdx)
		if !ok {
			return time.Time{}, false
		}
		s.mu.RLock()
		defer s.mu.RUnlock()
		mod := s.modules[devid]
		if mod == nil {
			return time.Time{}, false
		}
		i := mod.find(k)
		if i < 0 || mod.flags[i]&fTime == 0 {
			return time.Time{}, false
		}
		return time.Unix(0, mod.times[i]), true
	}
}
