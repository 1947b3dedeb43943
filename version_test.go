package main

import (
	"strings"
	"testing"
)

func TestVersionExitsZero(t *testing.T) {
	code, out, _ := runArgs(t, "--version")
	if code != exitOK || !strings.Contains(out, "bragerone_exporter") {
		t.Fatalf("code=%d out=%q", code, out)
	}
}
