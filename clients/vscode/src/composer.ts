/**
 * What the chat's composer offers besides the text box: the model picker's choices (from the
 * `tandem.models` setting; the choice is written to `tandem.model`, which the server reads from
 * the next turn) and the completion of `/` commands (from `tandem/commands`). Pure: no `vscode`
 * import, unit-tested in Node.
 */

export interface ModelChoice {
  label: string;
  description?: string;
  /** What `tandem.model` becomes: a name, or `undefined` for Tandem's own choice. */
  value: string | undefined;
  picked: boolean;
}

/** The configured models by name, then "Tandem's default"; the current one is `picked`. */
export function modelChoices(models: Record<string, unknown> | undefined, current: string | undefined): ModelChoice[] {
  const choices: ModelChoice[] = Object.entries(models ?? {}).map(([name, config]) => {
    const { provider, model } = (config ?? {}) as { provider?: unknown; model?: unknown };
    const description = [provider, model].filter((part) => typeof part === "string" && part !== "").join(" · ");
    return { label: name, description: description || undefined, value: name, picked: name === current };
  });
  if (current && !choices.some((choice) => choice.value === current)) {
    choices.unshift({ label: current, description: "set in tandem.model", value: current, picked: true });
  }
  choices.push({
    label: "Tandem's default",
    description: "the first configured model, else what the environment's API key allows",
    value: undefined,
    picked: !current,
  });
  return choices;
}

/** The composer's label for the model: its name, or "Default model". */
export function modelLabel(current: string | undefined): string {
  return current?.trim() ? current.trim() : "Default model";
}

export interface CommandInfo {
  name: string;
  description?: string;
  argumentHint?: string;
}

/**
 * The commands a prompt being typed could be completing: the text is a `/` and the start of a
 * name (nothing after it yet); the names that start with it, then those that contain it, at most
 * `limit`. Anything else: none.
 */
export function matchCommands(commands: CommandInfo[], text: string, limit = 8): CommandInfo[] {
  const typed = /^\/([^\s/]*)$/.exec(text);
  if (!typed) {
    return [];
  }
  const word = typed[1].toLowerCase();
  const starts = commands.filter((command) => command.name.toLowerCase().startsWith(word));
  const contains = commands.filter((command) => !command.name.toLowerCase().startsWith(word) && command.name.toLowerCase().includes(word));
  return [...starts, ...contains].slice(0, limit);
}
