package agent

import (
	"strings"

	"github.com/deskbot/deskbot"
)

// ToolSource gives the tools a desk gets from one part of the service: the
// sandbox (sandbox.Manager.Tools), the broker (broker.Tools), the chat
// (MessageTools).
type ToolSource func(desk string) []deskbot.Tool

// BuildRegistries builds each desk's registry from the sources, keeping only
// the tools its configuration lists (all when it lists none). A tool that is
// not offered is not in the registry at all, so a model that names it anyway
// is told it does not exist rather than having it run. A listed tool that no
// source provides is a configuration error.
//
// cmd/deskbot calls it as:
//
//	agent.BuildRegistries(desks, sandboxManager.Tools,
//		func(string) []deskbot.Tool { return broker.Tools(paper, log) },
//		agent.MessageTools(store, dataDir, time.Now))
func BuildRegistries(desks []DeskConfig, sources ...ToolSource) (Registries, error) {
	rs := make(Registries, len(desks))
	for _, d := range desks {
		all := NewRegistry()
		for _, src := range sources {
			for _, t := range src(d.Name) {
				all.Add(t)
			}
		}
		if len(d.Tools) == 0 {
			rs[d.Name] = all
			continue
		}
		r := NewRegistry()
		for _, name := range d.Tools {
			t, ok := all.tools[name]
			if !ok {
				return nil, deskbot.Errorf(deskbot.EINVALID, "desk %q lists tool %q, which does not exist (tools are %s)", d.Name, name, strings.Join(all.Names(), ", "))
			}
			r.Add(t)
		}
		rs[d.Name] = r
	}
	return rs, nil
}
