//go:build !unix

package exporter

import "os"

func groupIsOurs(os.FileInfo) bool { return false }

// modeBitsMeaningful: outside Unix the mode bits do not say who may read a
// file (Windows reports 0666 for any writable one), so nothing is warned.
const modeBitsMeaningful = false
