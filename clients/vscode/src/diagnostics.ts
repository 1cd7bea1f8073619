/**
 * Forwards VS Code's diagnostics to Tandem (`tandem/didChangeDiagnostics`), so that after the
 * agent edits an open file, the edit's result tells the model the errors its change added as
 * the user's own language extensions see them (TypeScript, Pylance, ESLint…, with the project's
 * configuration), rather than nothing, or what a second language server started by Tandem
 * thinks. Each notification carries, for every `file` document whose diagnostics changed, all
 * of them (every source) and the document's version in VS Code now, which is the version the
 * language client sent in `didOpen`/`didChange`: the server waits for the report of the version
 * it edited. One notification per `onDidChangeDiagnostics` event, at once (the edit's result
 * waits for it), and one with everything when the server has (re)started.
 *
 * No `vscode` import: VS Code's diagnostics, documents and events are passed in
 * (`vscode.languages`, `vscode.workspace.textDocuments`, the client's `code2ProtocolConverter`),
 * so the unit tests run it under plain Node.
 */

import type { Diagnostic, DiagnosticSeverity, DidChangeDiagnosticsParams, DocumentDiagnostics } from "./protocol";

/** What the forwarder needs of a `vscode.Uri`. */
export interface UriLike {
  readonly scheme: string;
  toString(): string;
}

interface PositionLike {
  readonly line: number;
  readonly character: number;
}

/** What the forwarder reads of a `vscode.Diagnostic`. */
export interface DiagnosticLike {
  readonly range: { readonly start: PositionLike; readonly end: PositionLike };
  readonly message: string;
  /** `vscode.DiagnosticSeverity`: Error 0, Warning 1, Information 2, Hint 3. */
  readonly severity: number;
  readonly source?: string;
  readonly code?: string | number | { readonly value: string | number; readonly target: unknown };
  readonly tags?: readonly number[];
}

/** What the forwarder reads of a `vscode.TextDocument`. */
export interface VersionedDocument<U extends UriLike = UriLike> {
  readonly uri: U;
  readonly version: number;
}

/** VS Code as the forwarder sees it. */
export interface DiagnosticsHost<U extends UriLike> {
  /** `vscode.languages.getDiagnostics(uri)`. */
  diagnostics(uri: U): readonly DiagnosticLike[];
  /** `vscode.languages.getDiagnostics()`: every document that has (or had) diagnostics. */
  all(): readonly (readonly [U, readonly DiagnosticLike[]])[];
  /** `vscode.workspace.textDocuments`. */
  documents(): readonly VersionedDocument<U>[];
  /** The URI as the language client spells it to the server (`code2ProtocolConverter.asUri`). */
  asUri(uri: U): string;
}

function position(position: PositionLike) {
  return { line: position.line, character: position.character };
}

/**
 * `diagnostic` in LSP's shape, like `code2ProtocolConverter.asDiagnostic` but synchronous and
 * without `relatedInformation`, `codeDescription` and `data`: Tandem reads none of them, and a
 * field it cannot parse would cost the whole notification.
 */
export function toProtocolDiagnostic(diagnostic: DiagnosticLike): Diagnostic {
  const converted: Diagnostic = {
    range: { start: position(diagnostic.range.start), end: position(diagnostic.range.end) },
    message: diagnostic.message,
  };
  if (Number.isInteger(diagnostic.severity) && diagnostic.severity >= 0 && diagnostic.severity <= 3) {
    converted.severity = (diagnostic.severity + 1) as DiagnosticSeverity;
  }
  const code = typeof diagnostic.code === "object" && diagnostic.code !== null ? diagnostic.code.value : diagnostic.code;
  if (typeof code === "string" || typeof code === "number") {
    converted.code = code;
  }
  if (diagnostic.source) {
    converted.source = diagnostic.source;
  }
  // LSP's tags are VS Code's numbers (Unnecessary 1, Deprecated 2); others are not LSP's.
  const tags = diagnostic.tags?.filter((tag) => tag === 1 || tag === 2);
  if (tags && tags.length > 0) {
    converted.tags = [...tags];
  }
  return converted;
}

/**
 * The notification for the documents `uris`: each `file` document's diagnostics now and its
 * version (null when it is not open); `undefined` when none is a file.
 */
export function diagnosticsReport<U extends UriLike>(
  uris: readonly U[],
  host: DiagnosticsHost<U>,
): DidChangeDiagnosticsParams | undefined {
  const files = uris.filter((uri) => uri.scheme === "file");
  if (files.length === 0) {
    return undefined;
  }
  const versions = new Map<string, number>();
  for (const document of host.documents()) {
    if (document.uri.scheme === "file") {
      versions.set(host.asUri(document.uri), document.version);
    }
  }
  const documents = new Map<string, DocumentDiagnostics>();
  for (const uri of files) {
    const spelled = host.asUri(uri);
    documents.set(spelled, {
      uri: spelled,
      version: versions.get(spelled) ?? null,
      diagnostics: host.diagnostics(uri).map(toProtocolDiagnostic),
    });
  }
  return { documents: [...documents.values()] };
}

/** What `forwardDiagnostics` answers: the full report on demand, and the end of forwarding. */
export interface DiagnosticsForwarder {
  /** Sends every document's diagnostics (after the server has started: it knows none). */
  sendAll(): void;
  dispose(): void;
}

/**
 * Sends a report for each change `subscribe` announces (`vscode.languages.onDidChangeDiagnostics`)
 * with `send`, and everything when `sendAll` is called. `send` drops what a server that is not
 * running cannot take; `sendAll` after its start makes up for it.
 */
export function forwardDiagnostics<U extends UriLike>(
  host: DiagnosticsHost<U>,
  subscribe: (listener: (event: { readonly uris: readonly U[] }) => unknown) => { dispose(): unknown },
  send: (params: DidChangeDiagnosticsParams) => void,
): DiagnosticsForwarder {
  const forward = (uris: readonly U[]) => {
    const report = diagnosticsReport(uris, host);
    if (report) {
      send(report);
    }
  };
  const subscription = subscribe((event) => forward(event.uris));
  return {
    sendAll: () => forward(host.all().map(([uri]) => uri)),
    dispose: () => void subscription.dispose(),
  };
}
