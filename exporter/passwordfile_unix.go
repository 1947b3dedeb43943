//go:build unix

package exporter

import (
	"os"
	"slices"
	"syscall"
)

// groupIsOurs reports whether the file's group is one the process runs
// in: a file shared with the exporter's own group (a Kubernetes Secret
// mounted with fsGroup, mode 0440) is not readable by strangers.
func groupIsOurs(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	gid := int(st.Gid)
	if gid == os.Getegid() {
		return true
	}
	groups, err := os.Getgroups()
	return err == nil && slices.Contains(groups, gid)
}

// modeBitsMeaningful: a Unix file's mode says who may read it.
const modeBitsMeaningful = true
