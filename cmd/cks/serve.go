package main

import (
	"context"
	"fmt"

	"github.com/cks-dev/cks/hub"
)

// cmdServe runs a hub. dev mode pins the embedded SQLite default and prints
// how to open the studio with the admin token.
func cmdServe(ctx context.Context, args []string, e env, dev bool) error {
	name := "serve"
	if dev {
		name = "dev"
	}
	fs := flagSet(name, e)
	var sf storeFlags
	sf.register(fs)
	listen := fs.String("listen", "", "address to listen on (env CKS_LISTEN; default "+hub.DefaultListen+")")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: %s takes no arguments, got %q", errUsage, name, pos)
	}
	dir, dbURL := sf.resolve(e)
	if dev && sf.database == "" {
		dbURL = dir.DatabaseURL() // dev always uses the embedded default
	}
	cfg := hub.Config{
		DatabaseURL: dbURL,
		DataDir:     dir,
		Listen:      or(*listen, e.getenv("CKS_LISTEN"), hub.DefaultListen),
		Version:     version,
		Logger:      logger(e.stderr),
	}
	return hub.Run(ctx, cfg, func(r hub.Ready) {
		if !dev {
			return
		}
		tok, _ := dir.ReadToken()
		fmt.Fprintf(e.stdout, `
cks dev is running on %s (%s).

  Studio:  %s/   (sign in with the admin token)
  Token:   %s   (also in %s)
  CLI:     go run ./cmd/cks process list

Press Ctrl-C to stop.
`, r.URL, r.Backend, r.URL, tok, r.TokenFile)
	})
}
