package mcpserver

import "github.com/modelcontextprotocol/go-sdk/mcp"

// SubscriptionReads returns how many resources srv's subscriptions read
// to learn whether they changed.
func SubscriptionReads(srv *mcp.Server) int64 { return stateOf(srv).subs.reads.Load() }
