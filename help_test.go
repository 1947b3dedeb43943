package main

import (
	"strings"
	"testing"
)

// The top --help lists no flag of serve, the default command: it says so
// and names the command that lists them, and those flags work without the
// word serve, as it says.
func TestTopHelpSaysWhereServeFlagsAre(t *testing.T) {
	code, top, _ := runArgs(t, "--help")
	if code != exitOK {
		t.Fatalf("--help: exit %d", code)
	}
	if strings.Contains(top, "--web.listen-address") {
		t.Fatal("the top page lists serve's flags now: reword the pointer to them")
	}
	for _, want := range []string{"Without a command it runs serve", "\n    bragerone_exporter serve --help\n", "without the word serve"} {
		if !strings.Contains(top, want) {
			t.Errorf("--help lacks %q:\n%s", want, top)
		}
	}
	_, serve, _ := runArgs(t, "serve", "--help")
	if !strings.Contains(serve, "--web.listen-address") {
		t.Errorf("serve --help lacks its flags:\n%s", serve)
	}
	cli, err := parseForTest(t, "--web.listen-address=127.0.0.1:9", "--poll.interval=5s")
	if err != nil || cli.Serve.ListenAddress != "127.0.0.1:9" {
		t.Errorf("serve's flags without the word serve: listen address %q, err %v", cli.Serve.ListenAddress, err)
	}
}
