// validate-openapi.mjs FILE: validates an OpenAPI 3.1 document with the
// pinned @apidevtools/swagger-parser (its schema and semantic checks, every
// $ref resolved); exit 0 and "valid" on stdout, else exit 1 and why on stderr.
import SwaggerParser from "@apidevtools/swagger-parser";

const file = process.argv[2];
if (!file) {
  console.error("usage: node validate-openapi.mjs FILE");
  process.exit(2);
}
try {
  const api = await SwaggerParser.validate(file);
  if (!String(api.openapi).startsWith("3.1")) {
    throw new Error(`openapi is ${api.openapi}, not 3.1.x`);
  }
  console.log(`valid: OpenAPI ${api.openapi}, ${Object.keys(api.paths ?? {}).length} paths`);
} catch (err) {
  console.error(String(err.message ?? err));
  process.exit(1);
}
