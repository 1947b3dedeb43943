package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/bragerone/bragerone_exporter/cloudclient"
)

// passwordEnv is the environment variable holding the account password when
// no --cloud.password-file is given. The password is never a flag, so it never
// shows in a process listing.
const passwordEnv = "BRAGERONE_PASSWORD"

// cloudVars are the cloud flags' defaults, taken from the REST client.
func cloudVars() kong.Vars {
	return kong.Vars{"cloud_timeout": seconds(cloudclient.DefaultTimeout)}
}

// cloudFlags are shared by every command that talks to the cloud.
type cloudFlags struct {
	Platform     string        `name:"cloud.platform" default:"bragerone" enum:"bragerone,tisconnect" help:"Cloud platform preset: bragerone or tisconnect." group:"Cloud"`
	URL          string        `name:"cloud.url" help:"REST and Socket.IO base URL (default: the platform's, e.g. https://io.brager.pl)." group:"Cloud"`
	AssetsURL    string        `name:"cloud.assets-url" help:"Static assets base URL, also sent as Origin/Referer (default: the platform's)." group:"Cloud"`
	Email        string        `name:"cloud.email" env:"BRAGERONE_EMAIL" help:"Account email." group:"Cloud"`
	PasswordFile string        `name:"cloud.password-file" type:"path" help:"File holding the account password (else the BRAGERONE_PASSWORD environment variable). Re-read at every login." group:"Cloud"`
	ObjectID     int           `name:"cloud.object-id" help:"Object (installation) whose modules are watched (default: the account's first object)." group:"Cloud"`
	Modules      []string      `name:"cloud.modules" help:"Devids to watch (default: every module of the object)." group:"Cloud"`
	Timeout      time.Duration `name:"cloud.timeout" default:"${cloud_timeout}" help:"Timeout of one REST request." group:"Cloud"`

	// password, when set, is used instead of the environment or a file
	// (the embedded simulator's demo account).
	password string
}

// platform resolves the preset and any URL overrides.
func (f *cloudFlags) platform() (cloudclient.Platform, error) {
	p := cloudclient.BragerOne
	if f.Platform == "tisconnect" {
		p = cloudclient.TiSConnect
	}
	if f.URL != "" {
		u := strings.TrimRight(f.URL, "/")
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return p, usageErrorf("--cloud.url %q: want an http:// or https:// URL", f.URL)
		}
		p.BaseURL = u
		if f.AssetsURL == "" {
			// A custom cloud (the simulator, a proxy) serves its own assets.
			p.AssetsURL = u
		}
	}
	if f.AssetsURL != "" {
		u := strings.TrimRight(f.AssetsURL, "/")
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return p, usageErrorf("--cloud.assets-url %q: want an http:// or https:// URL", f.AssetsURL)
		}
		p.AssetsURL = u
	}
	return p, nil
}

// credentials returns a provider that reads the password afresh at every
// login, so a rotated password file is picked up without a restart.
func (f *cloudFlags) credentials() (cloudclient.CredentialsProvider, error) {
	if f.Email == "" {
		return nil, usageErrorf("no account email: set --cloud.email or BRAGERONE_EMAIL")
	}
	if f.password != "" {
		return cloudclient.StaticCredentials(cloudclient.Credentials{Email: f.Email, Password: f.password}), nil
	}
	if f.PasswordFile == "" && os.Getenv(passwordEnv) == "" {
		return nil, usageErrorf("no account password: set %s or --cloud.password-file", passwordEnv)
	}
	if f.PasswordFile != "" {
		if _, err := readPasswordFile(f.PasswordFile); err != nil {
			return nil, usageError{err}
		}
	}
	email, file := f.Email, f.PasswordFile
	return func(context.Context) (cloudclient.Credentials, error) {
		if file == "" {
			return cloudclient.Credentials{Email: email, Password: os.Getenv(passwordEnv)}, nil
		}
		pw, err := readPasswordFile(file)
		if err != nil {
			return cloudclient.Credentials{}, err
		}
		return cloudclient.Credentials{Email: email, Password: pw}, nil
	}, nil
}

func readPasswordFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--cloud.password-file: %w", err)
	}
	pw := strings.TrimRight(string(data), "\r\n")
	if pw == "" {
		return "", fmt.Errorf("--cloud.password-file %s is empty", path)
	}
	return pw, nil
}

// warnReadablePasswordFile warns, once at start, when users other than the
// exporter's own user and group may read the password file: its name and
// mode, never its content. The exporter still reads it; the mode is the
// owner's to fix.
func warnReadablePasswordFile(logger *slog.Logger, path string) {
	fi, err := os.Stat(path)
	if err != nil || !modeBitsMeaningful {
		return
	}
	perm := fi.Mode().Perm()
	if perm&0o004 != 0 || perm&0o040 != 0 && !groupIsOurs(fi) {
		logger.Warn("the password file is readable by other users: make it readable by the exporter only (chmod 600)",
			"file", path, "mode", fmt.Sprintf("%04o", perm))
	}
}

// newClient builds the REST client from the flags; it remembers its secrets
// in g.Secrets, which the log handlers mask.
func (f *cloudFlags) newClient(g *Globals, tune func(*cloudclient.Config)) (*cloudclient.Client, cloudclient.Platform, error) {
	p, err := f.platform()
	if err != nil {
		return nil, p, err
	}
	creds, err := f.credentials()
	if err != nil {
		return nil, p, err
	}
	if f.PasswordFile != "" && f.password == "" {
		warnReadablePasswordFile(g.Logger, f.PasswordFile)
	}
	cfg := cloudclient.Config{
		BaseURL:     p.BaseURL,
		AssetsURL:   p.AssetsURL,
		Credentials: creds,
		Timeout:     f.Timeout,
		Logger:      g.Logger,
		Secrets:     g.Secrets,
	}
	if f.password != "" {
		// The embedded simulator's demo password is public: the client
		// scrubs it from the cloud's errors with a set of its own, and the
		// logs do not mask it everywhere.
		cfg.Secrets = nil
	}
	if tune != nil {
		tune(&cfg)
	}
	c, err := cloudclient.New(cfg)
	if err != nil {
		return nil, p, usageError{err}
	}
	return c, p, nil
}

// loginError turns a failed first login into one clear line: wrong
// credentials are configuration to fix (exit 2), an unreachable cloud is a
// runtime failure (exit 1).
func loginError(err error) error {
	var apiErr *cloudclient.APIError
	if cloudclient.ClassifyLogin(err) == cloudclient.LoginRejected && errors.As(err, &apiErr) {
		return usageErrorf("login rejected by the cloud (HTTP %d): check the email and password", apiErr.Status)
	}
	return fmt.Errorf("login failed: %w", err)
}
