package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// newStdio is the stdio transport of `cks mcp`: a client that writes a
// request and closes stdin at once (a script, a desktop client quitting)
// still gets its answer. The SDK's transport ends the connection at the end
// of its input, cancelling what is in flight; this one holds the end of the
// input back until every request read has been answered.
func newStdio() mcp.Transport { return &answering{Transport: &mcp.StdioTransport{}} }

// answering is a Transport whose connection sees the end of its input only
// once every request it read has been answered.
type answering struct{ mcp.Transport }

func (t *answering) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &answeringConn{Connection: c, pending: map[string]bool{}, idle: make(chan struct{}), closed: make(chan struct{})}, nil
}

// answeringConn counts the requests read and not yet answered.
type answeringConn struct {
	mcp.Connection

	mu      sync.Mutex
	pending map[string]bool // the ids of the requests read and not answered
	idle    chan struct{}   // closed while pending is empty at the end of the input
	ended   bool            // the input ended
	closed  chan struct{}   // closed by Close
	once    sync.Once
}

// Close closes the connection, and lets the end of its input through.
func (c *answeringConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Connection.Close()
}

// key is the map key of a request id.
func key(id jsonrpc.ID) string { return fmt.Sprintf("%T:%v", id.Raw(), id.Raw()) }

func (c *answeringConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			c.mu.Lock()
			c.pending[key(req.ID)] = true
			c.mu.Unlock()
		}
		return msg, nil
	}
	if !errors.Is(err, io.EOF) {
		return nil, err
	}
	c.mu.Lock()
	c.ended = true
	c.signalLocked()
	c.mu.Unlock()
	select {
	case <-c.idle:
	case <-c.closed:
	case <-ctx.Done():
	}
	return nil, err
}

func (c *answeringConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		delete(c.pending, key(resp.ID))
		c.signalLocked()
		c.mu.Unlock()
	}
	return err
}

// signalLocked lets the end of the input through once nothing is pending
// (c.mu held).
func (c *answeringConn) signalLocked() {
	if c.ended && len(c.pending) == 0 {
		select {
		case <-c.idle:
		default:
			close(c.idle)
		}
	}
}
