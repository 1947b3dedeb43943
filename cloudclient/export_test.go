package cloudclient

import "time"

// Test access to the unexported decoders.
var (
	DecodeLogin   = decodeLogin
	DecodeModules = decodeModules
)

// SetJitter replaces the login jitter source.
func (c *Client) SetJitter(f func(max int64) int64) {
	c.jitter = func(max time.Duration) time.Duration { return time.Duration(f(int64(max))) }
}

// Test access to the list row decoders.
var (
	DecodeActivity  = decodeActivity
	DecodeAlarmRows = decodeAlarmRows
)
