// cks: a client of the cks hub's HTTP API and a worker that runs your functions on its tasks.
export { Client, DEFAULT_URL, durationMs } from "./client.js";
export type { CallOptions, ClientLogger, ClientOptions, Input, Output, Schema } from "./client.js";
export { CksError, Conflict, Forbidden, InvalidArgument, NotFound, RateLimited, TooLarge, Unauthorized, Unavailable, errorFor } from "./errors.js";
export { OPERATIONS } from "./operations.js";
export type { OperationName } from "./operations.js";
export type { components, operations, paths } from "./openapi.js";
export { PermanentFailure, TaskContext, Worker } from "./worker.js";
export type { Handler, Task, WorkerLogger, WorkerOptions } from "./worker.js";
