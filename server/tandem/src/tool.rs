//! `tandem tool`: runs one agent tool by hand and prints exactly what the model would read, for
//! debugging a tool, checking what the model sees of a project, and scripting. `--list` names
//! the tools and `--schema` prints one's parameters.
//!
//! A fresh session has read nothing, and `edit` and `write_file` refuse to change a file the
//! model has not read; so an existing file named by a string `path` argument is marked as read
//! first, as if the model had just read it. No approval is asked: the person typing the command
//! is the one who would approve it.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use serde_json::Value;
use tandem_agent::tools::{self, ToolError};

use crate::ask::{load_settings, tool_context, workspace_root};

#[derive(Debug, clap::Args)]
// The usage clap derives would show NAME as optional, since `--list` goes without it; a
// missing NAME is refused as `<NAME|--list>`, which names the way to learn the names.
#[command(
    override_usage = "tandem tool <NAME> [--args <JSON>] [--workspace <DIR>]\n       \
                      tandem tool <NAME> --schema\n       \
                      tandem tool --list"
)]
#[command(group(clap::ArgGroup::new("tool").required(true).args(["name", "list"])))]
pub struct ToolArgs {
    /// The tool to run, e.g. `read_file`; required unless `--list` (which names them all).
    name: Option<String>,
    /// The call's arguments, a JSON object as the model would send it. Default: `{}`.
    #[arg(long, value_name = "JSON", conflicts_with = "schema")]
    args: Option<String>,
    /// The workspace the tool works in. Default: the current directory.
    #[arg(long, value_name = "DIR", conflicts_with = "schema")]
    workspace: Option<PathBuf>,
    /// List the tools, each with the first sentence of its description.
    #[arg(long, conflicts_with_all = ["name", "args", "workspace", "schema"])]
    list: bool,
    /// Print the tool's parameters (a JSON Schema) instead of running it.
    #[arg(long)]
    schema: bool,
}

/// Runs `tandem tool`: 0 when the tool answered, 1 when it answered with an error for the
/// model; an error (exit 2) for a usage or configuration problem or a tool's internal error.
pub fn run(args: ToolArgs) -> Result<i32> {
    let all = tools::all();
    let mut out = io::stdout().lock();
    // Clap lets through exactly one of NAME and `--list`.
    let Some(name) = args.name else {
        let width = all.iter().map(|tool| tool.name().len()).max().unwrap_or(0);
        for tool in &all {
            let name = tool.name();
            writeln!(
                out,
                "{name:<width$}  {}",
                first_sentence(tool.description())
            )?;
        }
        return Ok(0);
    };
    let Some(tool) = all.iter().find(|tool| tool.name() == name) else {
        let names: Vec<&str> = all.iter().map(|tool| tool.name()).collect();
        bail!(
            "there is no tool named `{name}`; the tools are: {}",
            names.join(", ")
        );
    };
    if args.schema {
        let schema = serde_json::to_string_pretty(&tool.parameters())?;
        writeln!(out, "{schema}")?;
        return Ok(0);
    }
    let text = args.args.as_deref().unwrap_or("{}");
    let call: Value =
        serde_json::from_str(text).with_context(|| format!("--args is not valid JSON: {text}"))?;

    let root = workspace_root(args.workspace)?;
    let (_, settings) = load_settings(&root)?;
    let ctx = tool_context(&root, &settings);
    if let Some(path) = call.get("path").and_then(Value::as_str) {
        if let Ok(resolved) = ctx.workspace.resolve(path) {
            if resolved.is_file() {
                ctx.session.mark_read(&resolved);
            }
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("could not start the async runtime")?;
    // The same schema check the agent applies before a call, so the errors read the same.
    let result = match tandem_agent::tools::check_args(tool.as_ref(), &call) {
        Ok(()) => runtime.block_on(tool.run(call, &ctx)),
        Err(message) => Err(ToolError::Respond(message)),
    };
    // A background shell job keeps running on its own; nothing here should wait for it.
    runtime.shutdown_background();
    let (text, code) = match result {
        Ok(output) => (output.text, 0),
        Err(ToolError::Respond(message)) => (format!("error: {message}"), 1),
        Err(error @ ToolError::Fatal(_)) => bail!("{name}: {error}"),
    };
    if text.ends_with('\n') {
        write!(out, "{text}")?;
    } else {
        writeln!(out, "{text}")?;
    }
    out.flush()?;
    Ok(code)
}

/// The description up to its first full stop: what `--list` shows. Abbreviations such as
/// "e.g." are not the end of a sentence.
fn first_sentence(description: &str) -> &str {
    let mut from = 0;
    while let Some(found) = description[from..].find(". ") {
        let end = from + found;
        let before = &description[..end];
        if !(before.ends_with("e.g") || before.ends_with("i.e")) {
            return &description[..=end];
        }
        from = end + 2;
    }
    description
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sentences_skip_abbreviations() {
        assert_eq!(first_sentence("Reads a file. Then more."), "Reads a file.");
        assert_eq!(
            first_sentence("Finds files, e.g. `*.rs`. More."),
            "Finds files, e.g. `*.rs`."
        );
        assert_eq!(first_sentence("No full stop"), "No full stop");
        for tool in tools::all() {
            let sentence = first_sentence(tool.description());
            assert!(sentence.len() > 20, "{}: {sentence}", tool.name());
        }
    }
}
