package main

import (
	"context"
	"fmt"

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
	cfg := hub.Config{
		DatabaseURL: dbURL,
		DataDir:     dir,
		Listen:      or(*listen, e.getenv("CKS_LISTEN"), hub.DefaultListen),
		Version:     version,
		Logger:      logger(e.stderr),
	}
	return hub.Run(ctx, cfg, nil)
}
