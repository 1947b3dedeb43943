package realtime

import (
	"context"
	"net/http"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/realtime/transport"
)

// tokenResolveTimeout bounds the token resolution before a connect
// (docs/spec.md W-3.1d, W-3.1g: provider bounded at 20 s).
const tokenResolveTimeout = 20 * time.Second

// HandshakeHeaders returns the transport's header function: every connect
// resolves a fresh token (logging in again when it expired, e.g. after a long
// outage) and falls back to the last token when the auth backend is down, so
// the session never goes without one it could have used.
func HandshakeHeaders(client *cloudclient.Client, origin string) func(ctx context.Context) (http.Header, error) {
	return func(ctx context.Context) (http.Header, error) {
		rctx, cancel := context.WithTimeout(ctx, tokenResolveTimeout)
		defer cancel()
		tok, err := client.HandshakeToken(rctx)
		if err != nil {
			return nil, err
		}
		return transport.HandshakeHeader(tok, origin), nil
	}
}
