package cli

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alecthomas/kong"
)

// parserFreed is set by the cleanup of the parser of
// TestCommandRunsWithoutTheParser.
var parserFreed atomic.Bool

type freedProbeCmd struct{ sawFreed bool }

func (c *freedProbeCmd) Run(ctx context.Context, g *Globals) error {
	for deadline := time.Now().Add(10 * time.Second); !parserFreed.Load() && time.Now().Before(deadline); {
		runtime.GC()
		time.Sleep(time.Millisecond) // cleanups run on their own goroutine
	}
	c.sawFreed = parserFreed.Load()
	return nil
}

// TestCommandRunsWithoutTheParser checks that a running command does not keep
// the command-line parser (its model of every command and flag) reachable:
// serve runs for months, and the model would be live heap all along.
func TestCommandRunsWithoutTheParser(t *testing.T) {
	var cli struct {
		Probe freedProbeCmd `cmd:""`
	}
	run := func() *freedProbeCmd {
		parser, err := kong.New(&cli, kong.Name("probe"))
		if err != nil {
			t.Fatal(err)
		}
		runtime.AddCleanup(parser, func(struct{}) { parserFreed.Store(true) }, struct{}{})
		kctx, err := parser.Parse([]string{"probe"})
		if err != nil {
			t.Fatal(err)
		}
		if err := runSelected(context.Background(), kctx, &Globals{}); err != nil {
			t.Fatal(err)
		}
		return &cli.Probe
	}
	if !run().sawFreed {
		t.Fatal("the parser stayed reachable while the command ran")
	}
}
