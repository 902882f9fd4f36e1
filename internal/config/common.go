package config

// The settings every command finds the data directory, the database, a
// hub's address and a client's hub and token by: text, taken as given
// (the commands apply their flags and defaults).

// The variables of Common.
const (
	EnvDataDir     = "CKS_DATA_DIR"
	EnvDatabaseURL = "CKS_DATABASE_URL"
	EnvListen      = "CKS_LISTEN"
	EnvURL         = "CKS_URL"
	EnvToken       = "CKS_TOKEN"
)

// DefaultDataDir is the data directory used when none is given and none
// is found here or above (datadir.Default).
const DefaultDataDir = ".cks"

// DefaultListen is the address a hub listens on unless told otherwise.
const DefaultListen = "127.0.0.1:7433"

// Common are the locations of a command: each the variable's text, ""
// when unset (a flag wins over it).
type Common struct {
	// DataDir is CKS_DATA_DIR: the data directory.
	DataDir string
	// DatabaseURL is CKS_DATABASE_URL: the database.
	DatabaseURL string
	// Listen is CKS_LISTEN: a hub's address.
	Listen string
	// URL is CKS_URL, the hub a client calls, and Token CKS_TOKEN, its
	// bearer token.
	URL, Token string
}

// ParseCommon reads Common with getenv (nil: an empty environment).
func ParseCommon(getenv Getenv) Common {
	getenv = orEmpty(getenv)
	return Common{DataDir: getenv(EnvDataDir), DatabaseURL: getenv(EnvDatabaseURL), Listen: getenv(EnvListen),
		URL: getenv(EnvURL), Token: getenv(EnvToken)}
}

// commonSettings are the data directory, the database, the addresses and
// tokens, and the flags of dev and mcp.
func commonSettings() []Setting {
	allAgents := agentWords(AgentKinds()...)
	hubs := hubReaders()
	return []Setting{
		{Env: EnvDataDir, Flag: "data-dir", Readers: append(append([]string{"client", "mcp", "backup", "restore", "config"}, hubs...), allAgents...),
			Doc:     "the data directory: the SQLite file, the admin token (admin.token) and the serving hub's URL (hub.url)",
			Default: "the nearest " + DefaultDataDir + " here or above, else ./" + DefaultDataDir},
		{Env: EnvDatabaseURL, Flag: "database", Readers: append(append([]string{"mcp", "backup", "restore", "doctor"}, hubs...), allAgents...),
			Doc: "the database: a file path, sqlite:PATH, postgres://… or a libpq keyword/value string host=… dbname=… (a password in it is never printed); " +
				"`cks dev` ignores the variable (only its flag); `cks process list` reads it when no hub answers",
			Default: "the data directory's cks.db", Redact: true},
		{Env: EnvListen, Flag: "listen", Readers: hubs, Doc: "the hub's address HOST:PORT", Default: DefaultListen},
		{Env: EnvURL, Flag: "url", Readers: []string{"client", "mcp"}, Doc: "the hub a client calls",
			Default: "the data directory's hub.url"},
		{Env: EnvToken, Flag: "token", Readers: []string{"client", "mcp"}, Secret: true,
			Doc: "the bearer token of a client", Default: "the data directory's admin.token (for its own hub only)"},
		{Flag: "embedded", Readers: []string{"mcp"}, Default: "false",
			Doc: "serve MCP from the database without a hub (no sweepers)"},
		{Flag: "all-tools", Readers: []string{"mcp"}, Default: "false",
			Doc: "list every tool of the hub, not only those the token may call"},
		{Flag: "no-agents", Readers: []string{"dev"}, Default: "false", Doc: "`cks dev` starts the hub alone"},
		{Flag: "agent-grace", Readers: []string{"dev"}, Default: "10s",
			Doc: "how long `cks dev` waits at Ctrl-C for its agents to finish their tasks; then they interrupt them and " +
				"give them back (attempts not counted), and are killed if they have not exited 15s later"},
		{Flag: "exec-types", Readers: []string{"dev"},
			Doc: "task types of the exec agent `cks dev` starts with the command after --"},
	}
}
