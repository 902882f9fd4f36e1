// A stop that waits longer than the client's request timeout, through the
// official TypeScript SDK (pinned in package.json): stop_task TASK_ID with
// a deadline of 10 minutes, the request timing out after TIMEOUT_MS
// without progress (resetTimeoutOnProgress, as the SDK offers). Prints a
// line per progress notification and one with the answer.
//
// node mcp-long-stop.mjs URL TOKEN TASK_ID TIMEOUT_MS
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url, token, taskID, timeoutMS] = process.argv.slice(2);
const client = new Client({ name: 'cks-long-stop', version: '0' });
await client.connect(new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
}));
const start = Date.now();
let n = 0;
try {
  const res = await client.callTool(
    { name: 'stop_task', arguments: { task_id: Number(taskID), reason: 'hold', deadline: '10m' } },
    undefined,
    {
      timeout: Number(timeoutMS),
      resetTimeoutOnProgress: true,
      onprogress: (p) => {
        n++;
        console.log(JSON.stringify({ progress: n, waited_ms: Date.now() - start, total: p.total }));
      },
    },
  );
  console.log(JSON.stringify({ result: res.structuredContent, is_error: !!res.isError, progress: n, waited_ms: Date.now() - start }));
} catch (e) {
  console.log(JSON.stringify({ error: String(e), progress: n, waited_ms: Date.now() - start }));
  process.exit(1);
}
await client.close();
