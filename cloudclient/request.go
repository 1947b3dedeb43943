package cloudclient

import "slices"

// sortedUnique returns the module list as the cloud expects it: sorted,
// without duplicates or empty names.
func sortedUnique(in []string) []string {
	return slices.DeleteFunc(slices.Compact(slices.Sorted(slices.Values(in))), func(s string) bool { return s == "" })
}
