package cloudclient

// Platform names one deployment of the cloud: where the REST API lives, where
// the static assets (and the browser origin) live, and the container name the
// system version endpoint asks for.
type Platform struct{ Name, BaseURL, AssetsURL, Container string }

// The two known deployments. Any other base URL can be given in Config.
var (
	BragerOne  = Platform{"bragerone", "https://io.brager.pl", "https://one.brager.pl", "BragerOne"}
	TiSConnect = Platform{"tisconnect", "https://io.tisconnect.info", "https://www.tisconnect.info", "TisConnect"}
)

// Config returns a Config addressing this platform; callers fill in the rest.
func (p Platform) Config() Config {
	return Config{BaseURL: p.BaseURL, AssetsURL: p.AssetsURL, Container: p.Container}
}
