package cloudclient

import "slices"

// sortedUnique returns the module list as the cloud expects it: sorted,
// without duplicates or empty names.
func sortedUnique(in []string) []string {
	out := make([]string, 0, len(in))
	seen := make(map[string]bool, len(in))
	for _, s := range in {
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}
