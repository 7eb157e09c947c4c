package main

import (
	"context"
	"errors"
	"io"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/audit"
	"github.com/deskbot/deskbot/config"
	"github.com/deskbot/deskbot/model"
	"github.com/deskbot/deskbot/store"
)

// runAudit is `deskbot audit ...` (package audit): it reads the trail in
// the service's Redis, configured as the service is.
func runAudit(ctx context.Context, args []string, environ map[string]string, stdout, stderr io.Writer) int {
	return audit.Run(ctx, args, func(ctx context.Context) (audit.Deps, func(), error) {
		cfg, err := config.Load(environ)
		if err != nil {
			return audit.Deps{}, nil, errors.New("configuration:\n" + err.Error())
		}
		o := cfg.StoreOptions()
		if o.URL == "" && len(o.SentinelAddrs) == 0 && len(o.ClusterAddrs) == 0 {
			return audit.Deps{}, nil, deskbot.Errorf(deskbot.EINVALID, "the audit trail is in the service's Redis: set REDIS_URL (or REDIS_SENTINELS, REDIS_CLUSTER_ADDRS) as the service has it; the embedded Redis lives only inside the running service")
		}
		desks, err := agent.LoadDesks(cfg.Desks, cfg.DesksFile, []model.Config{cfg.DefaultModel()})
		if err != nil {
			return audit.Deps{}, nil, err
		}
		s, err := store.Open(ctx, o)
		if err != nil {
			return audit.Deps{}, nil, err
		}
		return audit.Deps{Ledger: s, Orders: s, Product: agent.Policies(desks).Product}, func() { s.Close() }, nil
	}, stdout, stderr)
}
