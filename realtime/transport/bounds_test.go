package transport

import (
	"testing"
	"time"
)

// docs/spec.md W-3.1g: a connect's leftover teardown is bounded at 5 s by
// default, and a client built without one gets that bound.
func TestTeardownBoundDefault(t *testing.T) {
	if DefaultTeardownTimeout != 5*time.Second {
		t.Fatalf("DefaultTeardownTimeout = %v, the spec's bound is 5s", DefaultTeardownTimeout)
	}
	c, err := New(Config{BaseURL: "http://127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	if c.cfg.TeardownTimeout != DefaultTeardownTimeout {
		t.Fatalf("a client without a teardown bound got %v", c.cfg.TeardownTimeout)
	}
}
