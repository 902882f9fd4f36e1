package agents

import (
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/service/liveness"
)

// Settings are one agent process's knobs, the configuration's Agent: each
// kind reads them from the environment under its own prefix
// (config.ParseAgent), flags of the same names overriding them
// (Settings.RegisterFlags).
type Settings = config.Agent

// Kinds lists the agent kinds, sorted (liveness.KnownKinds).
func Kinds() []string { return liveness.KnownKinds() }
