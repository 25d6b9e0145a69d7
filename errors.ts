/** An error that reaches the client as Mastodon's error entity: {"error": "...", "error_description"?: "..."}. */
export class ApiError extends Error {
  readonly statusCode: number;
  readonly description: string | undefined;
  constructor(statusCode: number, message: string, description?: string) {
    super(message);
    this.statusCode = statusCode;
    this.description = description;
  }
}

export const notFound = () => new ApiError(404, 'Record not found');
export const unprocessable = (message: string) => new ApiError(422, message);
export const forbidden = (message = 'This action is not allowed') => new ApiError(403, message);

/** A 422 for one or more fields, rendered like Mastodon's registration errors (with `details` per field). */
export class ValidationFailed extends ApiError {
  readonly details: Record<string, { error: string; description: string }[]>;
  constructor(details: Record<string, { error: string; description: string }[]>) {
    const summary = Object.entries(details)
      .map(([field, errs]) => `${field} ${errs.map((e) => e.description).join(', ')}`)
      .join(', ');
    super(422, `Validation failed: ${summary}`);
    this.details = details;
  }
}

/** A post would mention accounts outside its `allowed_mentions` (Mastodon's UnexpectedMentionsError): 422 naming them. */
export class UnexpectedMentions extends ApiError {
  readonly accountIds: string[];
  constructor(accountIds: string[]) {
    super(422, 'Post would be sent to unexpected accounts');
    this.accountIds = accountIds;
  }
}
