package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alecthomas/kong"
)

// syncBuffer is a log sink safe for the command's goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestSimulateServesUntilCancelled(t *testing.T) {
	logs := &syncBuffer{}
	g := &Globals{Logger: slog.New(slog.NewJSONHandler(logs, nil)), Stdout: io.Discard}
	cmd := &simulateCmd{Listen: "127.0.0.1:0", Modules: 3, Objects: 2, ParamsPerModule: 50, DriftInterval: time.Hour, TokenTTL: time.Hour, Seed: 1}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.Run(ctx, g) }()

	var url string
	deadline := time.Now().Add(10 * time.Second)
	for url == "" {
		for _, line := range strings.Split(logs.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "simulated cloud serving" {
				url, _ = rec["url"].(string)
			}
		}
		if url == "" && time.Now().After(deadline) {
			t.Fatalf("no serving URL logged; logs:\n%s", logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, want := range []string{`"email":"demo@example.com"`, `/control/state`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %s:\n%s", want, logs.String())
		}
	}
	// The start log names each object with its modules.
	var objects []string
	for _, line := range strings.Split(logs.String(), "\n") {
		var rec struct {
			Msg      string   `json:"msg"`
			ObjectID int      `json:"object_id"`
			Name     string   `json:"name"`
			Devids   []string `json:"devids"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "simulated object" && rec.ObjectID > 0 {
			objects = append(objects, fmt.Sprintf("%s:%d", rec.Name, len(rec.Devids)))
		}
	}
	if strings.Join(objects, " ") != "Home:2 Cottage:1" {
		t.Errorf("objects logged = %v, want Home with 2 modules and Cottage with 1; logs:\n%s", objects, logs.String())
	}
	body := strings.NewReader(`{"email":"demo@example.com","password":"demo-password"}`)
	res, err := http.Post(url+"/v1/auth/user", "application/json", body)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("login against the simulated cloud = %d", res.StatusCode)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil after cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("simulate did not return after its context was cancelled")
	}
	if _, err := http.Get(url + "/v1/system/version"); err == nil {
		t.Fatal("still serving after shutdown")
	}
}

func TestSimulateRejectsBadFlags(t *testing.T) {
	g := &Globals{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Stdout: io.Discard}
	for _, cmd := range []simulateCmd{
		{Listen: "127.0.0.1:0", Modules: 0, Objects: 1, ParamsPerModule: 10, TokenTTL: time.Hour},
		{Listen: "127.0.0.1:0", Modules: 1, Objects: 1, ParamsPerModule: 10, TokenTTL: 0},
		{Listen: "127.0.0.1:0", Modules: 3, Objects: 0, ParamsPerModule: 10, TokenTTL: time.Hour},
		{Listen: "127.0.0.1:0", Modules: 3, Objects: 4, ParamsPerModule: 10, TokenTTL: time.Hour},
	} {
		// Cancelled: a flag taken for good serves nothing and returns nil.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := cmd.Run(ctx, g)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%+v: err = %v, want a usage error", cmd, err)
		}
	}
}

// The simulator's settings come from BRAGERONE_SIMULATE_* variables, so a
// variable means one thing: BRAGERONE_MODULES, which reads like the
// exporter's --cloud.modules, sets nothing, and BRAGERONE_SIMULATE_MODULES
// is the number of simulated modules for `simulate` and `serve --simulate`
// alike.
func TestSimulateEnvironmentHasItsOwnPrefix(t *testing.T) {
	t.Setenv("BRAGERONE_MODULES", "7")
	t.Setenv("BRAGERONE_SEED", "99")
	cli, err := parseForTest(t, "simulate")
	if err != nil {
		t.Fatal(err)
	}
	if cli.Simulate.Modules != 3 || cli.Simulate.Seed != 1 {
		t.Errorf("simulate read the unprefixed variables: modules %d, seed %d", cli.Simulate.Modules, cli.Simulate.Seed)
	}
	t.Setenv("BRAGERONE_SIMULATE_MODULES", "5")
	t.Setenv("BRAGERONE_SIMULATE_SEED", "42")
	for _, args := range [][]string{{"simulate"}, {"serve", "--simulate"}} {
		cli, err := parseForTest(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		if got := map[string]int{"simulate": cli.Simulate.Modules, "serve": cli.Serve.SimulateModules}[args[0]]; got != 5 {
			t.Errorf("%v: BRAGERONE_SIMULATE_MODULES=5 gave %d modules", args, got)
		}
	}
	if cli, _ := parseForTest(t, "simulate"); cli.Simulate.Seed != 42 {
		t.Errorf("BRAGERONE_SIMULATE_SEED=42 gave seed %d", cli.Simulate.Seed)
	}
}

// Every environment variable means one thing: the flags of all commands
// bound to one variable agree on type and default, and the simulator's
// variables (and only its own and serve's --simulate ones) carry the
// BRAGERONE_SIMULATE_ prefix.
func TestEveryEnvironmentVariableMeansOneThing(t *testing.T) {
	var cli CLI
	parser, err := kong.New(&cli, kong.Name("bragerone_exporter"), kong.DefaultEnvars("BRAGERONE"), kong.Vars{"version": "test"}, flagVars(), kong.Exit(func(int) {}))
	if err != nil {
		t.Fatal(err)
	}
	type binding struct{ command, flag, kind, def string }
	byEnv := map[string][]binding{}
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, f := range n.Flags {
			for _, env := range f.Envs {
				byEnv[env] = append(byEnv[env], binding{n.Name, f.Name, f.Target.Type().String(), f.Default})
			}
			simulator := n.Name == "simulate" || strings.HasPrefix(f.Name, "simulate")
			for _, env := range f.Envs {
				if simulator != strings.HasPrefix(env, "BRAGERONE_SIMULATE") {
					t.Errorf("%s --%s is read from %s", n.Name, f.Name, env)
				}
			}
			if n.Name == "simulate" && len(f.Envs) == 0 {
				t.Errorf("simulate --%s has no environment variable", f.Name)
			}
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(parser.Model.Node)
	if len(byEnv["BRAGERONE_SIMULATE_MODULES"]) != 3 { // simulate, serve and diagnose
		t.Fatalf("BRAGERONE_SIMULATE_MODULES binds %v; the walk missed a command", byEnv["BRAGERONE_SIMULATE_MODULES"])
	}
	for env, bs := range byEnv {
		for _, b := range bs[1:] {
			if b.kind != bs[0].kind || b.def != bs[0].def {
				t.Errorf("%s means two things: %+v and %+v", env, bs[0], b)
			}
		}
	}
}
