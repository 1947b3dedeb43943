package nearest

import (
	"slices"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "", 3}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"timout", "timeout", 1}, {"same", "same", 0}} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestNames(t *testing.T) {
	names := []string{"cloud.timeout", "cloud.email", "cloud.url", "cloud.urn"}
	for _, c := range []struct {
		word  string
		limit int
		want  []string
	}{
		{"cloud.timout", 3, []string{"cloud.timeout"}},
		{"cloud.uri", 3, []string{"cloud.url", "cloud.urn"}}, // a tie: both
		{"nothing.like.it", 3, nil},
		{"cloud.timeout", 1, []string{"cloud.timeout"}},
		{"cloud.timout", 1, nil}, // one edit is not below a limit of 1
	} {
		if got := Names(c.word, names, c.limit); !slices.Equal(got, c.want) {
			t.Errorf("Names(%q, limit %d) = %q, want %q", c.word, c.limit, got, c.want)
		}
	}
}
