/** An operation the server refused; its message says why and what to change. */
export class RejectedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RejectedError';
  }
}

/** The object does not exist (any more): exit code 1, as kubectl's NotFound. */
export class NotFoundError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotFoundError';
  }
}
