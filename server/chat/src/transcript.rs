//! What the chat shows of a session, as data: the conversation's entries (the user's prompts,
//! the agent's answer and thoughts, tool calls with their content, notices), the plan, the
//! context use, the commands and the session's options, all kept up to date from ACP's
//! `session/update`s. No drawing here (`render.rs` draws an entry).

use std::collections::HashMap;

use agent_client_protocol::v1::schema as acp;

/// One thing in the conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    User(String),
    /// The agent's answer, Markdown.
    Agent(String),
    Thought(String),
    Tool(Tool),
    Notice(Level, String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warning,
    Error,
}

/// A tool call as the chat shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub id: String,
    pub title: String,
    pub kind: acp::ToolKind,
    pub status: acp::ToolCallStatus,
    pub content: Vec<ToolContent>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ToolContent {
    /// Text (Markdown: Tandem puts a tool's output in a code block).
    Text(String),
    Diff {
        path: String,
        old: Option<String>,
        new: String,
    },
}

/// An entry and a counter bumped on each change, which the renderer's cache is keyed on.
#[derive(Debug, Clone)]
pub struct Item {
    pub entry: Entry,
    pub revision: u64,
}

/// The session as the chat knows it.
#[derive(Debug, Default)]
pub struct Transcript {
    pub items: Vec<Item>,
    tools: HashMap<String, usize>,
    pub plan: Vec<acp::PlanEntry>,
    /// Tokens of the context used, of the window's size.
    pub usage: Option<(u64, u64)>,
    pub commands: Vec<acp::AvailableCommand>,
    pub options: Vec<acp::SessionConfigOption>,
    pub title: Option<String>,
    /// The workspace, which paths are shown relative to.
    pub root: std::path::PathBuf,
    revisions: u64,
}

impl Transcript {
    /// An empty transcript of the workspace `root`.
    pub fn new(root: std::path::PathBuf) -> Transcript {
        Transcript {
            root,
            ..Transcript::default()
        }
    }

    pub fn push(&mut self, entry: Entry) {
        self.revisions += 1;
        self.items.push(Item {
            entry,
            revision: self.revisions,
        });
    }

    /// Appends `text` to the last entry when it is of the same kind (`make` builds one).
    fn append(
        &mut self,
        text: &str,
        same: fn(&mut Entry) -> Option<&mut String>,
        make: fn(String) -> Entry,
    ) {
        self.revisions += 1;
        if let Some(last) = self.items.last_mut() {
            if let Some(existing) = same(&mut last.entry) {
                existing.push_str(text);
                last.revision = self.revisions;
                return;
            }
        }
        self.push(make(text.to_owned()));
    }

    pub fn notice(&mut self, level: Level, text: impl Into<String>) {
        self.push(Entry::Notice(level, text.into()));
    }

    /// Applies one update; returns whether anything shown changed.
    pub fn apply(&mut self, update: acp::SessionUpdate) -> bool {
        match update {
            acp::SessionUpdate::UserMessageChunk(chunk) => {
                let text = chunk_text(&chunk.content);
                self.append(
                    &text,
                    |entry| match entry {
                        Entry::User(text) => Some(text),
                        _ => None,
                    },
                    Entry::User,
                );
            }
            acp::SessionUpdate::AgentMessageChunk(chunk) => {
                let text = chunk_text(&chunk.content);
                self.append(
                    &text,
                    |entry| match entry {
                        Entry::Agent(text) => Some(text),
                        _ => None,
                    },
                    Entry::Agent,
                );
            }
            acp::SessionUpdate::AgentThoughtChunk(chunk) => {
                let text = chunk_text(&chunk.content);
                self.append(
                    &text,
                    |entry| match entry {
                        Entry::Thought(text) => Some(text),
                        _ => None,
                    },
                    Entry::Thought,
                );
            }
            acp::SessionUpdate::ToolCall(call) => {
                let tool = Tool {
                    id: call.tool_call_id.0.to_string(),
                    title: call.title,
                    kind: call.kind,
                    status: call.status,
                    content: call
                        .content
                        .iter()
                        .filter_map(|content| tool_content(content, &self.root))
                        .collect(),
                };
                match self.tools.get(&tool.id).copied() {
                    Some(at) => self.replace(at, Entry::Tool(tool)),
                    None => {
                        self.tools.insert(tool.id.clone(), self.items.len());
                        self.push(Entry::Tool(tool));
                    }
                }
            }
            acp::SessionUpdate::ToolCallUpdate(update) => self.update_tool(&update),
            acp::SessionUpdate::Plan(plan) => self.plan = plan.entries,
            acp::SessionUpdate::UsageUpdate(usage) => self.usage = Some((usage.used, usage.size)),
            acp::SessionUpdate::AvailableCommandsUpdate(update) => {
                self.commands = update.available_commands;
            }
            acp::SessionUpdate::ConfigOptionUpdate(update) => self.options = update.config_options,
            acp::SessionUpdate::SessionInfoUpdate(info) => {
                if let Some(title) = info.title.value() {
                    self.title = Some(title.clone());
                }
            }
            acp::SessionUpdate::Notice(notice) => {
                let level = match notice.severity {
                    acp::NoticeSeverity::Error => Level::Error,
                    acp::NoticeSeverity::Warning => Level::Warning,
                    _ => Level::Info,
                };
                let text = match notice.description {
                    Some(description) => format!("{}: {description}", notice.title),
                    None => notice.title,
                };
                self.notice(level, text);
            }
            _ => return false,
        }
        true
    }

    /// A tool call's update, as the tool call itself when it is new.
    pub fn update_tool(&mut self, update: &acp::ToolCallUpdate) {
        let id = update.tool_call_id.0.to_string();
        let fields = &update.fields;
        let Some(at) = self.tools.get(&id).copied() else {
            let tool = Tool {
                id: id.clone(),
                title: fields.title.clone().unwrap_or_else(|| "tool call".into()),
                kind: fields.kind.unwrap_or(acp::ToolKind::Other),
                status: fields.status.unwrap_or(acp::ToolCallStatus::Pending),
                content: fields
                    .content
                    .iter()
                    .flatten()
                    .filter_map(|content| tool_content(content, &self.root))
                    .collect(),
            };
            self.tools.insert(id, self.items.len());
            self.push(Entry::Tool(tool));
            return;
        };
        let Entry::Tool(mut tool) = self.items[at].entry.clone() else {
            return;
        };
        if let Some(title) = &fields.title {
            tool.title.clone_from(title);
        }
        if let Some(kind) = fields.kind {
            tool.kind = kind;
        }
        if let Some(status) = fields.status {
            tool.status = status;
        }
        if let Some(content) = &fields.content {
            tool.content = content
                .iter()
                .filter_map(|content| tool_content(content, &self.root))
                .collect();
        }
        self.replace(at, Entry::Tool(tool));
    }

    fn replace(&mut self, at: usize, entry: Entry) {
        self.revisions += 1;
        if let Some(item) = self.items.get_mut(at) {
            item.entry = entry;
            item.revision = self.revisions;
        }
    }

    /// The current value of the session option `id` (`model`, `mode`), by its name.
    pub fn option(&self, id: &str) -> Option<String> {
        let option = self.options.iter().find(|option| &*option.id.0 == id)?;
        let acp::SessionConfigKind::Select(select) = &option.kind else {
            return None;
        };
        let current = select.current_value.0.to_string();
        let name = self
            .choices(id)
            .into_iter()
            .find(|(value, _)| *value == current)
            .map(|(_, name)| name);
        Some(name.unwrap_or(current))
    }

    /// The values option `id` can take: (value, name).
    pub fn choices(&self, id: &str) -> Vec<(String, String)> {
        let Some(option) = self.options.iter().find(|option| &*option.id.0 == id) else {
            return Vec::new();
        };
        let acp::SessionConfigKind::Select(select) = &option.kind else {
            return Vec::new();
        };
        let all: Vec<&acp::SessionConfigSelectOption> = match &select.options {
            acp::SessionConfigSelectOptions::Ungrouped(options) => options.iter().collect(),
            acp::SessionConfigSelectOptions::Grouped(groups) => {
                groups.iter().flat_map(|group| &group.options).collect()
            }
            _ => Vec::new(),
        };
        all.into_iter()
            .map(|option| (option.value.0.to_string(), option.name.clone()))
            .collect()
    }

    /// Whether a tool call is still to finish (for the status line).
    pub fn running_tool(&self) -> Option<&Tool> {
        self.items.iter().rev().find_map(|item| match &item.entry {
            Entry::Tool(tool)
                if matches!(
                    tool.status,
                    acp::ToolCallStatus::InProgress | acp::ToolCallStatus::Pending
                ) =>
            {
                Some(tool)
            }
            _ => None,
        })
    }

    /// Marks the calls still pending or running as failed: the turn is over.
    pub fn settle_tools(&mut self) {
        let open: Vec<usize> = self
            .items
            .iter()
            .enumerate()
            .filter(|(_, item)| {
                matches!(&item.entry, Entry::Tool(tool) if matches!(tool.status,
                    acp::ToolCallStatus::InProgress | acp::ToolCallStatus::Pending))
            })
            .map(|(at, _)| at)
            .collect();
        for at in open {
            if let Entry::Tool(mut tool) = self.items[at].entry.clone() {
                tool.status = acp::ToolCallStatus::Failed;
                self.replace(at, Entry::Tool(tool));
            }
        }
    }
}

/// A content block's text (an image or other non-text block as a placeholder).
pub fn chunk_text(content: &acp::ContentBlock) -> String {
    match content {
        acp::ContentBlock::Text(text) => text.text.clone(),
        acp::ContentBlock::Image(_) => "[image]".to_owned(),
        acp::ContentBlock::ResourceLink(link) => format!("@{}", link.uri),
        _ => String::new(),
    }
}

/// Content as the chat shows it; a diff's path relative to `root` when it is inside.
pub fn tool_content(content: &acp::ToolCallContent, root: &std::path::Path) -> Option<ToolContent> {
    match content {
        acp::ToolCallContent::Content(content) => {
            Some(ToolContent::Text(chunk_text(&content.content)))
        }
        acp::ToolCallContent::Diff(diff) => Some(ToolContent::Diff {
            path: diff
                .path
                .strip_prefix(root)
                .unwrap_or(&diff.path)
                .display()
                .to_string(),
            old: diff.old_text.clone(),
            new: diff.new_text.clone(),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(value: serde_json::Value) -> acp::SessionUpdate {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn chunks_of_one_kind_join_and_a_tool_call_is_updated_in_place() {
        let mut transcript = Transcript::default();
        for value in [
            serde_json::json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Let me "}}),
            serde_json::json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "look."}}),
            serde_json::json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Run `ls`", "kind": "execute", "status": "pending"}),
            serde_json::json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed",
                "content": [{"type": "content", "content": {"type": "text", "text": "a\nb"}}]}),
            serde_json::json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Done."}}),
        ] {
            assert!(transcript.apply(update(value)));
        }
        let entries: Vec<&Entry> = transcript.items.iter().map(|item| &item.entry).collect();
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[0], &Entry::Agent("Let me look.".into()));
        let Entry::Tool(tool) = entries[1] else {
            panic!("{entries:?}")
        };
        assert_eq!(tool.status, acp::ToolCallStatus::Completed);
        assert_eq!(tool.title, "Run `ls`");
        assert_eq!(tool.content, vec![ToolContent::Text("a\nb".into())]);
        assert_eq!(entries[2], &Entry::Agent("Done.".into()));
    }
}
