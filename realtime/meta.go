package realtime

import "github.com/bragerone/bragerone_exporter/cloudclient"

// keepKnown is row with the descriptive fields a degraded row leaves empty
// (gateway {} or null, null strings: cloudclient's tolerant decoding) taken
// from last, the module's previous row: a degraded row says nothing new
// about the module's name or versions, and replacing them with "" would
// churn module_info's series and blank the status page.
func keepKnown(last, row cloudclient.Module) cloudclient.Module {
	keep := func(now *string, before string) {
		if *now == "" {
			*now = before
		}
	}
	keep(&row.Name, last.Name)
	keep(&row.Title, last.Title)
	keep(&row.Version, last.Version)
	keep(&row.Gateway.Address, last.Gateway.Address)
	keep(&row.Gateway.Interface, last.Gateway.Interface)
	keep(&row.Gateway.Version, last.Gateway.Version)
	return row
}
