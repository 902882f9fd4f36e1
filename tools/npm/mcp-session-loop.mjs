// The session-exhaustion loop of issue 37 with the official TypeScript
// SDK (pinned in package.json): ROUNDS times connect to the MCP endpoint
// URL with TOKEN, call list_tasks and close — the SDK's close does not
// DELETE its session. Each round must succeed.
//
// node mcp-session-loop.mjs URL TOKEN ROUNDS
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url, token, rounds] = process.argv.slice(2);
for (let i = 0; i < Number(rounds); i++) {
  const client = new Client({ name: 'cks-session-loop', version: '0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  try {
    await client.connect(transport);
    const res = await client.callTool({ name: 'list_tasks', arguments: {} });
    if (res.isError) throw new Error(`list_tasks: ${JSON.stringify(res.content)}`);
    await client.close();
  } catch (e) {
    console.log(JSON.stringify({ round: i, error: String(e) }));
    process.exit(1);
  }
}
console.log(JSON.stringify({ rounds: Number(rounds) }));
