package cloudclient

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
)

// assetBackoff is the pause before the 2nd and 3rd asset attempt.
var assetBackoff = []time.Duration{200 * time.Millisecond, 600 * time.Millisecond}

type assetEntry struct {
	etag, lastModified string
	body               []byte
}

func retryableAssetStatus(s int) bool {
	switch s {
	case 429, 500, 502, 503, 504:
		return true
	}
	return false
}

// Asset fetches a static asset (path relative to AssetsURL, e.g.
// "/assets/index-abc.js") without a token. A cached copy is revalidated with
// If-None-Match / If-Modified-Since and returned on 304. Transport errors and
// 429/500/502/503/504 are retried after 200 ms and 600 ms. The returned slice
// is shared with the cache and must not be modified.
func (c *Client) Asset(ctx context.Context, path string) ([]byte, error) {
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u := c.assetBase + path
	conditional := true
	var lastErr error
	for attempt := 0; attempt <= len(assetBackoff); {
		cl := &call{method: "GET", url: u, tmpl: cloudapi.EndpointAsset}
		c.assetMu.Lock()
		cached := c.assets[u]
		c.assetMu.Unlock()
		if conditional && cached != nil {
			cl.header = map[string]string{}
			if cached.etag != "" {
				cl.header["If-None-Match"] = cached.etag
			}
			if cached.lastModified != "" {
				cl.header["If-Modified-Since"] = cached.lastModified
			}
		}
		r, err := c.send(ctx, cl, nil, "")
		switch {
		case err == nil && r.status == 304:
			if cached != nil && cached.body != nil {
				return cached.body, nil
			}
			if !conditional {
				return nil, c.apiError(cl, r)
			}
			// A 304 for a body we do not hold: ask again unconditionally.
			conditional = false
			continue
		case err == nil && r.status >= 200 && r.status <= 299:
			e := &assetEntry{etag: r.header.Get("ETag"), lastModified: r.header.Get("Last-Modified"), body: r.body}
			c.assetMu.Lock()
			c.assets[u] = e
			c.assetMu.Unlock()
			return r.body, nil
		case err == nil && !retryableAssetStatus(r.status):
			_, err := c.check(cl, r, nil)
			return nil, err
		case err == nil:
			lastErr = c.apiError(cl, r)
		default:
			if ctx.Err() != nil {
				return nil, err
			}
			lastErr = err
		}
		c.logFailure(cl.tmpl, lastErr)
		if attempt == len(assetBackoff) {
			break
		}
		if err := c.cfg.Sleep(ctx, assetBackoff[attempt]); err != nil {
			return nil, fmt.Errorf("cloudclient: %s: %w", cloudapi.EndpointAsset, err)
		}
		attempt++
	}
	return nil, lastErr
}
