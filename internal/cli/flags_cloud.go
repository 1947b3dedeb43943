package cli

import (
	"log/slog"
	"time"

	"github.com/alecthomas/kong"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/exporter"
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
	ObjectIDs    []int         `name:"cloud.object-id" help:"Objects (installations) to watch, repeatable or comma-separated (default: every object of the account)." group:"Cloud"`
	Modules      []string      `name:"cloud.modules" help:"Devids to watch, on whichever objects list them (default: every module of the watched objects)." group:"Cloud"`
	Timeout      time.Duration `name:"cloud.timeout" default:"${cloud_timeout}" help:"Timeout of one REST request." group:"Cloud"`

	Simulate                bool `help:"Run against an embedded simulated cloud with the demo account (no credentials needed)." group:"Cloud"`
	SimulateModules         int  `name:"simulate.modules" default:"${simulate_modules}" help:"Modules of the embedded simulated cloud." group:"Cloud"`
	SimulateObjects         int  `name:"simulate.objects" default:"${simulate_objects}" help:"Objects (installations) the simulated modules are split over, 1 to --simulate.modules." group:"Cloud"`
	SimulateParamsPerModule int  `name:"simulate.params-per-module" default:"${simulate_params_per_module}" help:"Parameters per simulated module." group:"Cloud"`

	// password, when set, is used instead of the environment or a file
	// (the embedded simulator's demo account).
	password string
	// sim is the embedded simulated cloud a tool's --simulate started;
	// closeSimulation stops it.
	sim *cloudsim.Cloud
}

// simulation is the embedded simulated cloud the flags ask for.
func (f *cloudFlags) simulation() exporter.Simulate {
	return exporter.Simulate{Enabled: f.Simulate, Modules: f.SimulateModules, Objects: f.SimulateObjects, ParamsPerModule: f.SimulateParamsPerModule}
}

// simulated starts, with --simulate, the embedded simulated cloud in this
// process (once) and points the flags at it with its demo account, as
// serve --simulate does (which also drops --cloud.object-id); the command
// stops it with closeSimulation.
func (f *cloudFlags) simulated() error {
	if !f.Simulate || f.sim != nil {
		return nil
	}
	quiet := slog.New(slog.DiscardHandler) // the simulator's own log would drown the tool's output
	c, sim, err := exporter.SimulatedCloud(quiet, f.simulation(), f.cloud())
	if err != nil {
		return err
	}
	f.sim = sim
	// A tool keeps --cloud.object-id and --cloud.modules: they pick among
	// the demo account's objects and modules (5747 Home, 18857 Cottage).
	f.URL, f.AssetsURL, f.Email, f.password, f.PasswordFile = c.URL, c.AssetsURL, c.Email, c.Password, ""
	return nil
}

// closeSimulation stops the simulated cloud a tool started, if any.
func (f *cloudFlags) closeSimulation() {
	if f.sim != nil {
		_ = f.sim.Close()
		f.sim = nil
	}
}

// cloud maps the flags to the exporter's cloud settings.
func (f *cloudFlags) cloud() exporter.Cloud {
	return exporter.Cloud{
		Preset: f.Platform, URL: f.URL, AssetsURL: f.AssetsURL,
		Email: f.Email, PasswordFile: f.PasswordFile, PasswordEnv: passwordEnv, Password: f.password,
		ObjectIDs: f.ObjectIDs, Modules: f.Modules, Timeout: f.Timeout,
	}
}

// platform resolves the preset and any URL overrides.
func (f *cloudFlags) platform() (cloudclient.Platform, error) { return f.cloud().Platform() }

// credentials returns a provider that reads the password afresh at every
// login.
func (f *cloudFlags) credentials() (cloudclient.CredentialsProvider, error) {
	return f.cloud().Credentials()
}

// newClient builds the REST client from the flags; it remembers its secrets
// in g.Secrets, which the log handlers mask.
//
// With --simulate it first starts the embedded simulated cloud (simulated).
func (f *cloudFlags) newClient(g *Globals, tune func(*cloudclient.Config)) (*cloudclient.Client, cloudclient.Platform, error) {
	if err := f.simulated(); err != nil {
		return nil, cloudclient.Platform{}, err
	}
	cloud := f.cloud()
	return cloud.NewClient(g.Logger, g.Secrets, tune)
}
