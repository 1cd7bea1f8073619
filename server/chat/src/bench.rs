//! What the chat's benchmark (`benches/frames.rs`) measures, here because it drives the app's
//! private parts: a long answer streamed into a chat on a 120×40 screen (ratatui's test
//! backend: the drawing and diffing of a real frame, no terminal I/O), one frame drawn per
//! chunk as the event loop would, with a key typed every 10 chunks. It reports the frames per
//! second the chat can draw while an answer streams, and the time from a keystroke to the
//! frame that shows it.

use std::time::{Duration, Instant};

use agent_client_protocol::v1::schema as acp;
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use crate::app::App;
use crate::client::{self, FromAgent};
use crate::theme::Theme;
use crate::{ui, ChatError, Result};

/// What one run measured.
#[derive(Debug, Clone)]
pub struct Report {
    pub chunks: usize,
    pub answer_bytes: usize,
    /// Each frame's time to draw, in order.
    pub frames: Vec<Duration>,
    /// Keystroke to drawn frame, for each key typed.
    pub keys: Vec<Duration>,
}

impl Report {
    pub fn frames_per_second(&self) -> f64 {
        let total: Duration = self.frames.iter().sum();
        self.frames.len() as f64 / total.as_secs_f64().max(f64::EPSILON)
    }
}

/// The `p`th percentile (0–100) of `times`.
pub fn percentile(times: &[Duration], p: usize) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted
        .get((sorted.len().saturating_sub(1) * p) / 100)
        .copied()
        .unwrap_or_default()
}

/// Streams an answer of `chunks` chunks (Markdown: paragraphs, lists and code) into a chat
/// connected to Tandem's agent in this process.
pub async fn stream_long_answer(chunks: usize) -> Result<Report> {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (agent_read, agent_write) = tokio::io::split(theirs);
    let agent = tokio::spawn(tandem_acp::serve(
        agent_read,
        agent_write,
        tandem_acp::ServeOptions::default(),
    ));
    let (read, write) = tokio::io::split(ours);
    let transport = tandem_acp::line_transport(read, write);
    let workspace = std::env::temp_dir();
    let report = client::run(transport, async |connection, _agent| {
        let (done, _done_rx) = tokio::sync::mpsc::unbounded_channel();
        let mut app = App::new(connection, workspace, Theme::colored(), done);
        let session = acp::SessionId::new("bench");
        app.start_session(session.clone(), None);
        let mut terminal = Terminal::new(TestBackend::new(120, 40))
            .map_err(|error| ChatError::Usage(error.to_string()))?;
        let mut report = Report {
            chunks,
            answer_bytes: 0,
            frames: Vec::with_capacity(chunks),
            keys: Vec::new(),
        };
        for index in 0..chunks {
            let text = chunk(index);
            report.answer_bytes += text.len();
            let update = acp::SessionUpdate::AgentMessageChunk(acp::ContentChunk::new(
                acp::ContentBlock::Text(acp::TextContent::new(text)),
            ));
            app.on_agent(FromAgent::Update(acp::SessionNotification::new(
                session.clone(),
                update,
            )));
            let typed = (index % 10 == 0).then(Instant::now);
            if typed.is_some() {
                app.on_terminal(Event::Key(KeyEvent::new(
                    KeyCode::Char('x'),
                    KeyModifiers::NONE,
                )));
            }
            let started = Instant::now();
            terminal
                .draw(|frame| ui::draw(frame, &mut app))
                .map_err(|error| ChatError::Usage(error.to_string()))?;
            report.frames.push(started.elapsed());
            if let Some(typed) = typed {
                report.keys.push(typed.elapsed());
            }
        }
        Ok(report)
    })
    .await;
    agent.abort();
    report
}

/// The `index`th chunk of the answer: a few words, now and then a list item or a code block.
fn chunk(index: usize) -> String {
    match index % 40 {
        0 => "\n\n## Step\n\n".to_owned(),
        10 => "\n\n- an item with `code` and **bold** text\n- another item\n\n".to_owned(),
        20 => "\n\n```rust\nfn main() {\n    let total: u64 = (0..10).sum();\n    println!(\"{total}\");\n}\n```\n\n"
            .to_owned(),
        _ => format!("word{index} and some more of the answer, "),
    }
}
