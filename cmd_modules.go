package main

import (
	"context"
	"fmt"

	"github.com/bragerone/bragerone_exporter/cloudclient"
)

// modulesCmd lists the modules of the object as the cloud reports them.
type modulesCmd struct {
	cloudFlags `embed:""`
	outputFlag `embed:""`
}

// modulesJSON is the document of `modules --output=json`.
type modulesJSON struct {
	ObjectID int          `json:"objectId"`
	Modules  []moduleJSON `json:"modules"`
}

// moduleJSON is one module of `modules --output=json`.
type moduleJSON struct {
	Devid       string      `json:"devid"`
	ID          int         `json:"id"`
	Name        string      `json:"name"`
	Title       string      `json:"title"`
	Version     string      `json:"version"`
	Online      bool        `json:"online"`
	ConnectedAt int64       `json:"connectedAt"`
	Connected   string      `json:"connectedAtTime,omitempty"` // RFC 3339; absent while offline
	Gateway     gatewayJSON `json:"gateway"`
}

type gatewayJSON struct {
	Address   string `json:"address"`
	Interface string `json:"interface"`
	Version   string `json:"version"`
}

func (c *modulesCmd) Run(ctx context.Context, g *Globals) error {
	s, err := openSession(ctx, &c.cloudFlags, g)
	if err != nil {
		return err
	}
	defer s.close()
	objectID, modules, err := s.namedModules(ctx, &c.cloudFlags, c.Modules, modulesFlag)
	if err != nil {
		return err
	}

	if c.json() {
		rows := make([]moduleJSON, 0, len(modules))
		for _, m := range modules {
			rows = append(rows, toModuleJSON(m))
		}
		return writeJSON(g.Stdout, modulesJSON{ObjectID: objectID, Modules: rows})
	}
	tw := newTable(g.Stdout)
	fmt.Fprintln(tw, "DEVID\tNAME\tTITLE\tVERSION\tSTATE\tCONNECTED AT\tGATEWAY\tGATEWAY VERSION")
	for _, m := range modules {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Devid, dash(m.Name), dash(m.Title), dash(m.Version),
			onlineWord(m.Online()), formatEpoch(m.ConnectedAt), dash(m.Gateway.Address), dash(m.Gateway.Version))
	}
	return tw.Flush()
}

func toModuleJSON(m cloudclient.Module) moduleJSON {
	j := moduleJSON{
		Devid: m.Devid, ID: m.ID, Name: m.Name, Title: m.Title, Version: m.Version,
		Online: m.Online(), ConnectedAt: m.ConnectedAt,
		Gateway: gatewayJSON{Address: m.Gateway.Address, Interface: m.Gateway.Interface, Version: m.Gateway.Version},
	}
	if m.ConnectedAt != 0 {
		j.Connected = formatEpoch(m.ConnectedAt)
	}
	return j
}
