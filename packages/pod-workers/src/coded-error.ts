/** An error whose `code` is upstream's reason string, which a caller switches on. */
export class CodedError<Code extends string> extends Error {
  readonly code: Code;
  constructor(name: string, code: Code, message: string) {
    super(message);
    this.name = name;
    this.code = code;
  }
}
