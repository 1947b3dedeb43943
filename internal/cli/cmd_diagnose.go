package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/bragerone/bragerone_exporter/exporter"
)

// diagnosePasswordEnv holds the basic auth password of the exporter
// diagnose fetches from, when no --password-file is given.
const diagnosePasswordEnv = "BRAGERONE_DIAGNOSE_PASSWORD"

// diagnoseCmd makes a diagnostics bundle (README "Reporting a problem"):
// with --url, it fetches /debug/diagnostics from a running exporter, with
// the basic auth and TLS its web configuration asks for; without, it runs
// the exporter for a short session of its own (the serve flags: the cloud
// account, or --simulate) and writes the bundle of it.
type diagnoseCmd struct {
	URL              string        `name:"url" env:"BRAGERONE_DIAGNOSE_URL" help:"Base URL of a running exporter to fetch the bundle from (e.g. https://host:9826); without it, a short session of its own with the serve flags." group:"Diagnose"`
	Output           string        `name:"output" short:"o" env:"-" help:"File to write (default bragerone-diagnostics-<UTC time>.tar.gz in the working directory; - for standard output)." group:"Diagnose"`
	AuthUser         string        `name:"user" env:"BRAGERONE_DIAGNOSE_USER" help:"Basic auth user of the exporter's web configuration (the password from --password-file or BRAGERONE_DIAGNOSE_PASSWORD)." group:"Diagnose"`
	AuthPasswordFile string        `name:"password-file" env:"BRAGERONE_DIAGNOSE_PASSWORD_FILE" type:"path" help:"File holding the basic auth password." group:"Diagnose"`
	CAFile           string        `name:"tls.ca-file" env:"BRAGERONE_DIAGNOSE_TLS_CA_FILE" type:"existingfile" help:"CA certificate(s) to verify the exporter's TLS certificate with." group:"Diagnose"`
	Insecure         bool          `name:"tls.insecure-skip-verify" env:"BRAGERONE_DIAGNOSE_TLS_INSECURE_SKIP_VERIFY" help:"Do not verify the exporter's TLS certificate." group:"Diagnose"`
	Duration         time.Duration `name:"duration" env:"BRAGERONE_DIAGNOSE_DURATION" default:"30s" help:"Without --url: how long the session of its own watches the cloud after its first snapshot." group:"Diagnose"`

	serveCmd `embed:""`
}

func (d *diagnoseCmd) Run(ctx context.Context, g *Globals) error {
	out, name, err := d.output()
	if err != nil {
		return err
	}
	if d.URL != "" {
		err = d.fetch(ctx, out)
	} else {
		err = d.session(ctx, g, out)
	}
	if c, ok := out.(io.Closer); ok && out != io.Writer(os.Stdout) {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		if name != "" {
			_ = os.Remove(name)
		}
		return err
	}
	if name != "" {
		fmt.Fprintf(g.Stdout, "diagnostics bundle written to %s\n", name)
	}
	return nil
}

// output opens the file to write; name is "" for standard output.
func (d *diagnoseCmd) output() (io.Writer, string, error) {
	if d.Output == "-" {
		return os.Stdout, "", nil
	}
	name := d.Output
	if name == "" {
		name = "bragerone-diagnostics-" + time.Now().UTC().Format("20060102T150405Z") + ".tar.gz"
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, "", usageErrorf("--output: %v", err)
	}
	return f, name, nil
}

// fetch downloads the bundle of a running exporter.
func (d *diagnoseCmd) fetch(ctx context.Context, out io.Writer) error {
	u := strings.TrimRight(d.URL, "/")
	parsed, err := url.Parse(u)
	if err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
		return usageErrorf("--url: want an http or https URL of the exporter")
	}
	if parsed.User != nil {
		// Never echoed: the URL holds a password.
		return usageErrorf("--url: give the user with --user and the password with --password-file or %s, not in the URL", diagnosePasswordEnv)
	}
	tlsCfg := &tls.Config{InsecureSkipVerify: d.Insecure} //nolint:gosec // the user asked for it
	if d.CAFile != "" {
		pem, err := os.ReadFile(d.CAFile)
		if err != nil {
			return usageErrorf("--tls.ca-file: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return usageErrorf("--tls.ca-file %s: no PEM certificate in it", d.CAFile)
		}
		tlsCfg.RootCAs = pool
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u+"/debug/diagnostics", nil)
	if err != nil {
		return usageErrorf("--url: %v", err)
	}
	if d.AuthUser != "" {
		pw, err := d.authPassword()
		if err != nil {
			return err
		}
		req.SetBasicAuth(d.AuthUser, pw)
	}
	hc := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{TLSClientConfig: tlsCfg, Proxy: http.ProxyFromEnvironment}}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("fetching the diagnostics bundle: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetching the diagnostics bundle: %s answered %s", u+"/debug/diagnostics", resp.Status)
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		return fmt.Errorf("fetching the diagnostics bundle: %w", err)
	}
	return nil
}

// authPassword reads the basic auth password from the file or the
// environment.
func (d *diagnoseCmd) authPassword() (string, error) {
	if d.AuthPasswordFile != "" {
		b, err := os.ReadFile(d.AuthPasswordFile)
		if err != nil {
			return "", usageErrorf("--password-file: %v", err)
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	pw, ok := os.LookupEnv(diagnosePasswordEnv)
	if !ok {
		return "", usageErrorf("--user needs a password: --password-file or %s", diagnosePasswordEnv)
	}
	return pw, nil
}

// session runs the exporter until its first snapshot is stored and
// Duration more, and writes its bundle.
func (d *diagnoseCmd) session(ctx context.Context, g *Globals, out io.Writer) error {
	if d.Duration <= 0 {
		return usageErrorf("--duration must be positive")
	}
	cfg, err := d.serveCmd.config(g)
	if err != nil {
		return err
	}
	cfg.Web.ListenAddress = "127.0.0.1:0"
	cfg.Diagnostics.CaptureFile = ""
	if cfg.Diagnostics.RingBytes == 0 {
		return usageErrorf("--diagnostics.ring-bytes 0: a bundle of a session of its own needs the traffic ring")
	}
	e, err := exporter.New(cfg)
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx) }()
	g.Logger.Info("watching the cloud for the diagnostics bundle", "after_first_snapshot", d.Duration)
	select {
	case <-e.Ready():
	case err := <-done:
		return errors.Join(errors.New("the exporter stopped before its first snapshot"), err)
	case <-ctx.Done():
		stop()
		<-done
		return ctx.Err()
	}
	t := time.NewTimer(d.Duration)
	defer t.Stop()
	select {
	case <-t.C:
	case err := <-done:
		if err != nil {
			return err
		}
	case <-ctx.Done():
	}
	werr := e.WriteBundle(out)
	stop()
	if err := <-done; err != nil && werr == nil {
		g.Logger.Warn("the session of the diagnostics bundle ended with an error", "err", err)
	}
	return werr
}
