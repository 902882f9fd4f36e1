package main

import (
	"context"
	"fmt"

	"github.com/cks-dev/cks/internal/base/datadir"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/hub"
)

// cmdServe runs a hub. dev mode is `cks dev` (dev.go): a hub on the embedded
// SQLite default plus the seed agents as child processes.
func cmdServe(ctx context.Context, args []string, e env, dev bool) error {
	if dev {
		return cmdDev(ctx, args, e)
	}
	fs := flagSet("serve", e)
	var sf storeFlags
	sf.register(fs)
	listen := fs.String("listen", "", "address `HOST:PORT` to listen on (env CKS_LISTEN; default "+hub.DefaultListen+")")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: serve takes no arguments, got %q", errUsage, pos)
	}
	catchSIGPIPE()
	dir, dbURL := sf.resolve(e)
	cfg, err := hubConfig(e, dir, dbURL, *listen)
	if err != nil {
		return err
	}
	cfg.Logger = logger(e.stderr)
	return hub.Run(ctx, cfg, nil)
}

// hubConfig is the configuration of the hub `cks serve` and `cks dev`
// run: on the database dbURL of the data directory dir, listening on
// listen (the flag, else CKS_LISTEN, else hub.DefaultListen), with the
// settings of the environment. A bad value is an error naming its
// variable, before anything is written.
func hubConfig(e env, dir datadir.Dir, dbURL, listen string) (hub.Config, error) {
	cfg := hub.Config{DatabaseURL: dbURL, DataDir: dir, Version: version,
		Listen: or(listen, e.common().Listen, hub.DefaultListen)}
	var err error
	if cfg.Settings, err = config.ParseHub(e.getenv); err != nil {
		return cfg, err
	}
	if cfg.HTTP, err = config.ParseHTTP(e.getenv); err != nil {
		return cfg, err
	}
	if cfg.TestClock, err = config.ParseTestClock(e.getenv); err != nil {
		return cfg, err
	}
	if cfg.Settings.Pipeline.InProcess { // the model of the pipeline in the hub
		if cfg.LLM, err = config.ParseLLM(e.getenv); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}
