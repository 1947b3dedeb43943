package cli

import (
	"context"

	"github.com/bragerone/bragerone_exporter/cloudclient"
)

// modulesCmd lists the modules of every watched object as the cloud
// reports them, each with its object.
type modulesCmd struct {
	cloudFlags `embed:""`
	outputFlag `embed:""`
}

func (c *modulesCmd) Run(ctx context.Context, g *Globals) error {
	s, err := openSession(ctx, &c.cloudFlags, g)
	if err != nil {
		return err
	}
	defer s.close()
	_, modules, err := s.namedModules(ctx, &c.cloudFlags, c.Modules, modulesFlag)
	if err != nil {
		return err
	}

	rows := make([]orderedObject, 0, len(modules))
	for _, m := range modules {
		rows = append(rows, locatedRecord(m))
	}
	if c.json() {
		return writeJSON(g.Stdout, orderedObject{{keyModules, rows}})
	}
	return writeTable(g.Stdout, []string{keyObjectID, keyObjectName, keyDevid, keyName, keyTitle, keyVersion, keyState, keyConnectedAt, keyGatewayAddress, keyGatewayVersion}, rows)
}

// locatedRecord is a module with its object, as `modules` and `check` print
// it.
func locatedRecord(m locatedModule) orderedObject {
	return append(orderedObject{{keyObjectID, m.object.ID}, {keyObjectName, orNull(m.object.Name)}}, moduleRecord(m.Module)...)
}

// moduleRecord is a module as `modules` prints it: its state is online or
// offline, and it has no connected_at while offline.
func moduleRecord(m cloudclient.Module) orderedObject {
	var connectedAt any
	if m.ConnectedAt != 0 {
		connectedAt = formatEpoch(m.ConnectedAt)
	}
	return orderedObject{
		{keyDevid, m.Devid}, {keyID, m.ID}, {keyName, orNull(m.Name)}, {keyTitle, orNull(m.Title)},
		{keyVersion, orNull(m.Version)}, {keyState, onlineWord(m.Online())}, {keyConnectedAt, connectedAt},
		{keyGatewayAddress, orNull(m.Gateway.Address)}, {keyGatewayInterface, orNull(m.Gateway.Interface)},
		{keyGatewayVersion, orNull(m.Gateway.Version)},
	}
}
