// Package history owns the rules that turn what the cloud says of a module's
// past (the alarm history list, the active alarm list and the activity
// log, each read a page at a time) into counts that only grow: every alarm
// occurrence counted once, whether it was seen active, only in the history,
// or both; every change of the log counted once by its outcome; nothing that
// began before the module was watched counted at all (it is shown, never
// replayed as new).
//
// An occurrence of an alarm is identified by its type code and its start: the
// rows' id is the alarm type, not a key. Whether a row's fields can be used
// is its decoder's verdict (package cloudclient's row Problem), never judged
// again here. A row with a problem, or one dated beyond the allowed skew into
// the future, out of order, or repeated within one read, costs that row only
// and is counted as dropped.
// Memory is bounded: the occurrences and changes remembered for
// deduplication are capped, and what falls off is remembered as a floor.
//
// Sweep owns how far a read pages. Nothing here does I/O or keeps time: every
// method takes now.
package history
