// Package nearest owns the "did you mean" of every place that reads names
// a person typed (configuration keys, environment variables, overrides,
// commands, registers): the edit distance between two names, and the names
// nearest a mistyped one.
package nearest

// Distance is the Levenshtein distance of a and b, in bytes.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Names returns the names at the smallest distance from word, when that
// distance is below limit; ties are all returned, in the order given.
func Names(word string, names []string, limit int) []string {
	best := limit
	var out []string
	for _, n := range names {
		switch d := Distance(word, n); {
		case d < best:
			best, out = d, []string{n}
		case d == best && len(out) > 0:
			out = append(out, n)
		}
	}
	return out
}
