// Typed errors for the hub's error answers.
//
// The hub answers a refused call with a 4xx or 5xx status and the body
// {"error": {"code", "message", "field"?}} (field only for invalid_argument,
// naming the input field at fault). errorFor maps such an answer to the
// subclass of CksError for its status, so callers can catch what they can act
// on (Conflict for a lost lease, NotFound…) with instanceof, and read the rest.

/** An error answer of the hub, or a call that could not reach it (status 0). */
export class CksError extends Error {
  /** The HTTP status; 0 when the hub could not be reached. */
  readonly status: number;
  /** The hub's error code: invalid_argument, lease_lost, throttled, unreachable… */
  readonly code: string;
  /** The hub's message, for a person. */
  override readonly message: string;
  /** The input field at fault (invalid_argument), when the hub named one. */
  readonly field: string | undefined;

  constructor(status: number, code: string, message: string, field?: string) {
    super(status ? `${status} ${code}: ${message}` : `${code}: ${message}`);
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.message = message;
    this.field = field;
  }

  /** "Conflict: 409 lease_lost: …", the class, status and code with the hub's message. */
  override toString(): string {
    return this.status ? `${this.name}: ${this.status} ${this.code}: ${this.message}` : `${this.name}: ${this.code}: ${this.message}`;
  }
}

/** 400: the input was refused; field names the input field at fault when the hub said. */
export class InvalidArgument extends CksError {}

/** 401: no token, or one the hub does not know (revoked, expired). */
export class Unauthorized extends CksError {}

/** 403: the token lacks the permission the call needs. */
export class Forbidden extends CksError {}

/** 404: no such task, process, object… */
export class NotFound extends CksError {}

/** 409: the state does not admit the call; code lease_lost when the caller's lease was fenced. */
export class Conflict extends CksError {}

/** 413: the request body is larger than the hub takes. */
export class TooLarge extends CksError {}

/** 429: the hub throttles the caller; the client retries these before throwing. */
export class RateLimited extends CksError {}

/** 503 (or a connection failure, status 0): the hub or its database cannot take the call now; retried before throwing. */
export class Unavailable extends CksError {}

const BY_STATUS: Record<number, typeof CksError> = {
  400: InvalidArgument,
  401: Unauthorized,
  403: Forbidden,
  404: NotFound,
  409: Conflict,
  413: TooLarge,
  429: RateLimited,
  503: Unavailable,
};

/** The typed error for an answer with this status (CksError itself for others). */
export function errorFor(status: number, code: string, message: string, field?: string): CksError {
  const Class = BY_STATUS[status] ?? CksError;
  return new Class(status, code, message, field);
}
