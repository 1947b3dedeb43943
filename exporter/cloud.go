package exporter

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/redact"
)

// Cloud says which cloud to talk to, as whom, and which of the account's
// modules to watch (the flags of the Cloud group). Every command that talks
// to the cloud builds its REST client from it.
type Cloud struct {
	Preset       string        // --cloud.platform: "bragerone" or "tisconnect"
	URL          string        // --cloud.url ("" = the platform's)
	AssetsURL    string        // --cloud.assets-url ("" = the platform's, or URL when that is set)
	Email        string        // --cloud.email
	PasswordFile string        // --cloud.password-file, re-read at every login
	ObjectIDs    []int         // --cloud.object-id (none = every object of the account)
	Modules      []string      // --cloud.modules (none = every module of the watched objects)
	Timeout      time.Duration // --cloud.timeout of one REST request

	// PasswordEnv names the environment variable that holds the password
	// when no PasswordFile is given; it is read at every login.
	PasswordEnv string
	// Password, when set, is used instead of the environment or a file: the
	// embedded simulator's public demo password.
	Password string
}

// Platform resolves the preset and any URL overrides.
func (c Cloud) Platform() (cloudclient.Platform, error) {
	p := cloudclient.BragerOne
	if c.Preset == "tisconnect" {
		p = cloudclient.TiSConnect
	}
	if c.URL != "" {
		u := strings.TrimRight(c.URL, "/")
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return p, configErrorf("--cloud.url %q: want an http:// or https:// URL", c.URL)
		}
		p.BaseURL = u
		if c.AssetsURL == "" {
			// A custom cloud (the simulator, a proxy) serves its own assets.
			p.AssetsURL = u
		}
	}
	if c.AssetsURL != "" {
		u := strings.TrimRight(c.AssetsURL, "/")
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return p, configErrorf("--cloud.assets-url %q: want an http:// or https:// URL", c.AssetsURL)
		}
		p.AssetsURL = u
	}
	return p, nil
}

// Credentials returns a provider that reads the password afresh at every
// login, so a rotated password file is picked up without a restart. It
// fails when no email or no password is configured, or the password file
// cannot be read.
func (c Cloud) Credentials() (cloudclient.CredentialsProvider, error) {
	if c.Email == "" {
		return nil, configErrorf("no account email: set --cloud.email or BRAGERONE_EMAIL")
	}
	if c.Password != "" {
		return cloudclient.StaticCredentials(cloudclient.Credentials{Email: c.Email, Password: c.Password}), nil
	}
	if c.PasswordFile == "" && os.Getenv(c.PasswordEnv) == "" {
		return nil, configErrorf("no account password: set %s or --cloud.password-file", c.PasswordEnv)
	}
	if c.PasswordFile != "" {
		if _, err := readPasswordFile(c.PasswordFile); err != nil {
			return nil, &ConfigError{err}
		}
	}
	email, file, env := c.Email, c.PasswordFile, c.PasswordEnv
	return func(context.Context) (cloudclient.Credentials, error) {
		if file == "" {
			return cloudclient.Credentials{Email: email, Password: os.Getenv(env)}, nil
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

// NewClient builds the REST client; it remembers its secrets in secrets,
// which the log handlers mask. tune, when set, adjusts the client's
// configuration last (the exporter's request and login observers). A
// password file other users may read is warned about (once: NewClient is
// called once at start).
func (c Cloud) NewClient(logger *slog.Logger, secrets *redact.Set, tune func(*cloudclient.Config)) (*cloudclient.Client, cloudclient.Platform, error) {
	p, err := c.Platform()
	if err != nil {
		return nil, p, err
	}
	creds, err := c.Credentials()
	if err != nil {
		return nil, p, err
	}
	if c.PasswordFile != "" && c.Password == "" {
		warnReadablePasswordFile(logger, c.PasswordFile)
	}
	cfg := cloudclient.Config{
		BaseURL:     p.BaseURL,
		AssetsURL:   p.AssetsURL,
		Credentials: creds,
		Timeout:     c.Timeout,
		Logger:      logger,
		Secrets:     secrets,
	}
	if c.Password != "" {
		// The embedded simulator's demo password is public: the client
		// scrubs it from the cloud's errors with a set of its own, and the
		// logs do not mask it everywhere.
		cfg.Secrets = nil
	}
	if tune != nil {
		tune(&cfg)
	}
	client, err := cloudclient.New(cfg)
	if err != nil {
		return nil, p, &ConfigError{err}
	}
	return client, p, nil
}

// warnReadablePasswordFile warns, once at start, when users other than the
// exporter's own user and group may read the password file: its name and
// mode, never its content. The exporter still reads it; the mode is the
// owner's to fix.
func warnReadablePasswordFile(logger *slog.Logger, path string) {
	fi, err := os.Stat(path)
	if err != nil || !modeBitsMeaningful || logger == nil {
		return
	}
	perm := fi.Mode().Perm()
	if perm&0o004 != 0 || perm&0o040 != 0 && !groupIsOurs(fi) {
		logger.Warn("the password file is readable by other users: make it readable by the exporter only (chmod 600)",
			"file", path, "mode", fmt.Sprintf("%04o", perm))
	}
}
